// Unit tests of lib/app/held_roots: the SQL that finds the roots an outside RESTRICT / NO ACTION foreign key holds,
// checked as text (validate and dry-run run it; tests/integration/test_first_hour.py checks what it finds).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/held_roots.h"
#include "config/config.h"
#include "plan/tree.h"
#include "schema/catalog.h"

using goarchive::app::held_condition;
using goarchive::app::not_held;
using goarchive::app::outside_references;
using goarchive::config::Job;
using goarchive::config::Relation;
using goarchive::plan::Tree;
using goarchive::schema::ForeignKey;
using goarchive::schema::TableInfo;

namespace {

// Customer -> Invoice -> InvoiceLine in database `c`.
Job chinook() {
  Job j;
  j.name = "cust";
  j.root_table = "Customer";
  j.where = "1=1";
  Relation invoice;
  invoice.table = "Invoice";
  invoice.foreign_key = {"CustomerId"};
  Relation line;
  line.table = "InvoiceLine";
  line.parent = "Invoice";
  line.foreign_key = {"InvoiceId"};
  j.relations = {invoice, line};
  return j;
}

TableInfo table(const std::string& name, const std::string& key) {
  TableInfo t;
  t.database = "c";
  t.name = name;
  t.exists = true;
  t.primary_key = {key};
  return t;
}

ForeignKey reference(const std::string& db, const std::string& from, const std::string& column, const std::string& to,
                     const std::string& to_column, const std::string& rule) {
  ForeignKey fk;
  fk.name = "fk_" + from;
  fk.database = db;
  fk.table = from;
  fk.columns = {column};
  fk.ref_database = "c";
  fk.ref_table = to;
  fk.ref_columns = {to_column};
  fk.delete_rule = rule;
  return fk;
}

}  // namespace

TEST_CASE("only RESTRICT and NO ACTION references from outside the job hold roots") {
  Job job = chinook();
  Tree tree(job);
  std::vector<TableInfo> tables = {table("Customer", "CustomerId"), table("Invoice", "InvoiceId"),
                                   table("InvoiceLine", "InvoiceLineId")};
  tables[0].referenced_by = {reference("c", "Invoice", "CustomerId", "Customer", "CustomerId", "RESTRICT"),
                             reference("c", "Ticket", "CustomerId", "Customer", "CustomerId", "CASCADE")};
  tables[2].referenced_by = {reference("other", "Refund", "LineId", "InvoiceLine", "InvoiceLineId", "NO ACTION")};
  auto refs = outside_references(tree, tables, "c");
  REQUIRE(refs.size() == 1);  // Invoice is in the job; a CASCADE reference is preflight's refusal, not a hold
  CHECK(refs[0].node == 2);
  CHECK(refs[0].label("c") == "other.Refund.fk_Refund");

  SUBCASE("a reference two levels below the root joins up to it") {
    CHECK(held_condition(refs[0], tree, tables, "c") ==
          "EXISTS (SELECT 1 FROM `c`.`InvoiceLine` AS ga_h0 JOIN `c`.`Invoice` AS ga_h1 ON ga_h0.`InvoiceId` = "
          "ga_h1.`InvoiceId` WHERE ga_h1.`CustomerId` = `c`.`Customer`.`CustomerId` AND EXISTS (SELECT 1 FROM "
          "`other`.`Refund` AS ga_o WHERE ga_o.`LineId` = ga_h0.`InvoiceLineId`))");
  }
  SUBCASE("a reference into the root reads the root row itself") {
    tables[2].referenced_by.clear();
    tables[0].referenced_by.push_back(reference("c", "Review", "CustomerId", "Customer", "CustomerId", "NO ACTION"));
    auto root_refs = outside_references(tree, tables, "c");
    REQUIRE(root_refs.size() == 1);
    CHECK(root_refs[0].label("c") == "Review.fk_Review");
    CHECK(held_condition(root_refs[0], tree, tables, "c") ==
          "EXISTS (SELECT 1 FROM `c`.`Review` AS ga_o WHERE ga_o.`CustomerId` = `c`.`Customer`.`CustomerId`)");
    CHECK(not_held(root_refs, tree, tables, "c") == "NOT ((" + held_condition(root_refs[0], tree, tables, "c") + "))");
  }
  SUBCASE("no reference: every root may move") { CHECK(not_held({}, tree, tables, "c") == "1"); }
}

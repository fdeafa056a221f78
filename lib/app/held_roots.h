#pragma once
// The roots a foreign key from outside a job holds in the source. A RESTRICT / NO ACTION reference from a table
// outside the job into one of its tables keeps every root whose tree holds a referenced row: the delete would fail,
// so a run leaves that root in the source, blocked. Builds the SQL that finds such roots and counts them, for
// validate (a cheap sample) and dry-run (every root); never writes, and never decides what a run does.
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "plan/tree.h"
#include "schema/catalog.h"

namespace goarchive::app {

// A RESTRICT / NO ACTION foreign key of a table outside the job that references job table `node`.
struct OutsideReference {
  schema::ForeignKey fk;
  int node = 0;
  // "InvoiceLine.FK_InvoiceLineInvoiceId", or "otherdb.InvoiceLine.FK_..." when the table is in another database.
  std::string label(const std::string& source_database) const;
};

// Every such reference into the job's source tables (`tables` by node index), in node order.
std::vector<OutsideReference> outside_references(const plan::Tree& tree, const std::vector<schema::TableInfo>& tables,
                                                 const std::string& database);

// An SQL condition, true when the root row of the enclosing query (the root table named `database`.`root`, not
// aliased) has a row in its tree, along each table's first parent, that `ref` references.
std::string held_condition(const OutsideReference& ref, const plan::Tree& tree,
                           const std::vector<schema::TableInfo>& tables, const std::string& database);

// How many of the first `limit` roots matching the job's `where` (in no particular order) `ref` holds, and how many
// were looked at: one bounded query, cheap enough for validate on a table of any size.
struct HeldSample {
  unsigned long long looked_at = 0, held = 0;
  bool whole = false;  // looked_at is every root that matches where (fewer than `limit`)
};
HeldSample sample_held(db::Connection& source, const config::Job& job, const OutsideReference& ref,
                       const plan::Tree& tree, const std::vector<schema::TableInfo>& tables, const std::string& database,
                       unsigned long long limit = 1000);

// Every root matching where, and how many each reference holds (`held`, by reference) and any of them holds.
struct HeldCounts {
  unsigned long long roots = 0, blocked = 0;
  std::vector<unsigned long long> held;
};
HeldCounts count_held(db::Connection& source, const config::Job& job, const std::vector<OutsideReference>& refs,
                      const plan::Tree& tree, const std::vector<schema::TableInfo>& tables,
                      const std::string& database);

// `NOT (held OR held ...)` over `refs`, or "1" when there are none: the roots a run could move.
std::string not_held(const std::vector<OutsideReference>& refs, const plan::Tree& tree,
                     const std::vector<schema::TableInfo>& tables, const std::string& database);

}  // namespace goarchive::app

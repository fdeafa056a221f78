// Unit tests of lib/plan/tree: the relation tree of a job.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/config.h"
#include "helpers.h"
#include "plan/tree.h"
#include "util/error.h"

using goarchive::ConfigError;
using goarchive::config::Job;
using goarchive::config::Relation;
using goarchive::plan::Tree;
using goarchive::test::message_of;

namespace {

Relation rel(std::string table, std::vector<std::string> fk, std::string parent = "",
             std::vector<std::string> references = {}) {
  Relation r;
  r.table = std::move(table);
  r.parent = std::move(parent);
  r.foreign_key = std::move(fk);
  r.references = std::move(references);
  return r;
}

Job job(std::vector<Relation> relations, std::string root = "orders") {
  Job j;
  j.name = "shop";
  j.root_table = std::move(root);
  j.where = "1=1";
  j.relations = std::move(relations);
  return j;
}

Job shop(bool children_first = false) {
  std::vector<Relation> r;
  if (children_first) r.push_back(rel("shipment_items", {"shipment_id"}, "shipments", {"id"}));
  r.push_back(rel("order_items", {"order_id"}));
  r.push_back(rel("payments", {"order_id"}, "orders"));
  r.push_back(rel("shipments", {"order_id"}));
  if (!children_first) r.push_back(rel("shipment_items", {"shipment_id"}, "shipments", {"id"}));
  return job(std::move(r));
}

std::vector<std::string> tables(const Tree& t, const std::vector<int>& order) {
  std::vector<std::string> out;
  for (int i : order) out.push_back(t.nodes()[static_cast<size_t>(i)].table);
  return out;
}

// Every node appears once, after its parent.
void check_parent_first(const Tree& t) {
  const auto& order = t.copy_order();
  REQUIRE(order.size() == t.nodes().size());
  CHECK(order.front() == 0);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& n = t.nodes()[static_cast<size_t>(order[pos])];
    CHECK(std::count(order.begin(), order.end(), order[pos]) == 1);
    if (n.parent < 0) continue;
    auto parent_pos = std::find(order.begin(), order.end(), n.parent) - order.begin();
    CHECK(static_cast<size_t>(parent_pos) < pos);
  }
}

}  // namespace

TEST_CASE("tree: a root-only job") {
  Tree t(job({}));
  REQUIRE(t.nodes().size() == 1);
  CHECK(t.root().table == "orders");
  CHECK(t.root().parent == -1);
  CHECK(t.root().depth == 0);
  CHECK(t.root().children.empty());
  CHECK(t.copy_order() == std::vector<int>{0});
  CHECK(t.delete_order() == std::vector<int>{0});
  CHECK(t.index_of("orders") == 0);
  CHECK(t.index_of("nope") == -1);
  CHECK(t.render() == "orders (root)\n");
}

TEST_CASE("tree: the shop tree is copied parent-first and deleted in reverse") {
  Tree t(shop());
  REQUIRE(t.nodes().size() == 5);
  CHECK(tables(t, t.copy_order()) ==
        std::vector<std::string>{"orders", "order_items", "payments", "shipments", "shipment_items"});
  std::vector<int> reversed(t.copy_order().rbegin(), t.copy_order().rend());
  CHECK(t.delete_order() == reversed);
  CHECK(tables(t, t.delete_order()) ==
        std::vector<std::string>{"shipment_items", "shipments", "payments", "order_items", "orders"});
  check_parent_first(t);

  int si = t.index_of("shipment_items");
  int sh = t.index_of("shipments");
  REQUIRE(si > 0);
  REQUIRE(sh > 0);
  const auto& node = t.nodes()[static_cast<size_t>(si)];
  CHECK(node.parent == sh);
  CHECK(node.depth == 2);
  CHECK(node.foreign_key == std::vector<std::string>{"shipment_id"});
  CHECK(node.references == std::vector<std::string>{"id"});
  CHECK(t.nodes()[static_cast<size_t>(sh)].depth == 1);
  CHECK(t.nodes()[static_cast<size_t>(t.index_of("payments"))].parent == 0);
  CHECK(t.root().children.size() == 3);
}

TEST_CASE("tree: a child listed before its parent still comes after it") {
  Tree t(shop(true));
  check_parent_first(t);
  CHECK(tables(t, t.copy_order()) ==
        std::vector<std::string>{"orders", "order_items", "payments", "shipments", "shipment_items"});
  CHECK(tables(t, t.delete_order()).front() == "shipment_items");
  CHECK(tables(t, t.delete_order()).back() == "orders");
}

TEST_CASE("tree: render draws the shop tree") {
  Tree t(shop());
  CHECK(t.render() ==
        "orders (root)\n"
        "|-- order_items (order_id -> orders.primary key)\n"
        "|-- payments (order_id -> orders.primary key)\n"
        "`-- shipments (order_id -> orders.primary key)\n"
        "    `-- shipment_items (shipment_id -> shipments.id)\n");
}

TEST_CASE("tree: render continues the branch of a non-last child") {
  Tree t(job({rel("order_items", {"order_id"}), rel("item_notes", {"item_id", "region"}, "order_items", {"id", "r"}),
              rel("payments", {"order_id"})}));
  CHECK(t.render() ==
        "orders (root)\n"
        "|-- order_items (order_id -> orders.primary key)\n"
        "|   `-- item_notes (item_id, region -> order_items.id, r)\n"
        "`-- payments (order_id -> orders.primary key)\n");
}

TEST_CASE("tree: an unknown parent is refused") {
  Job j = job({rel("order_items", {"order_id"}), rel("x", {"y"}, "missing")});
  CHECK_THROWS_AS(Tree{j}, ConfigError);
  std::string msg = message_of<ConfigError>([&] { Tree t(j); });
  CHECK(msg.find("missing") != std::string::npos);
  CHECK(msg.find("shop") != std::string::npos);
}

TEST_CASE("tree: a table listed twice is refused") {
  Job j = job({rel("order_items", {"order_id"}), rel("order_items", {"order_id"})});
  CHECK_THROWS_AS(Tree{j}, ConfigError);
  CHECK(message_of<ConfigError>([&] { Tree t(j); }).find("twice") != std::string::npos);
}

TEST_CASE("tree: a relation equal to the root table is refused") {
  Job j = job({rel("orders", {"parent_id"})});
  CHECK_THROWS_AS(Tree{j}, ConfigError);
  CHECK(message_of<ConfigError>([&] { Tree t(j); }).find("root") != std::string::npos);
}

TEST_CASE("tree: two spellings of one table name that differ only in case are refused") {
  Job j = job({rel("itEms", {"order_id"}), rel("items", {"order_id"})});
  std::string msg = message_of<ConfigError>([&] { Tree t(j); });
  CHECK(msg.find("tables itEms and items differ only in letter case") != std::string::npos);
  Job root = job({rel("Orders", {"parent_id"})});
  CHECK(message_of<ConfigError>([&] { Tree t(root); }).find("tables orders and Orders differ only in letter case") !=
        std::string::npos);
  CHECK_NOTHROW(Tree{job({rel("items", {"order_id"}), rel("notes", {"item_id"}, "items")})});
}

TEST_CASE("tree: a cycle is refused") {
  Job j = job({rel("order_items", {"order_id"}), rel("a", {"b_id"}, "b"), rel("b", {"a_id"}, "a")});
  CHECK_THROWS_AS(Tree{j}, ConfigError);
  std::string msg = message_of<ConfigError>([&] { Tree t(j); });
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK(msg.find("a") != std::string::npos);
  CHECK(msg.find("b") != std::string::npos);
}

TEST_CASE("tree: a relation that is its own parent is refused") {
  Job j = job({rel("a", {"a_id"}, "a")});
  CHECK_THROWS_AS(Tree{j}, ConfigError);
}

// Sakila: customer (root) -> rental -> payment, and payment -> customer.
Job sakila(bool customer_edge_first) {
  std::vector<Relation> r;
  if (customer_edge_first) r.push_back(rel("payment", {"customer_id"}, "customer"));
  r.push_back(rel("rental", {"customer_id"}));
  r.push_back(rel("payment", {"rental_id"}, "rental"));
  if (!customer_edge_first) r.push_back(rel("payment", {"customer_id"}, "customer"));
  return job(std::move(r), "customer");
}

TEST_CASE("graph: a diamond is one node with two parents, copied after both and deleted before both") {
  for (bool customer_edge_first : {false, true}) {
    CAPTURE(customer_edge_first);
    Tree t(sakila(customer_edge_first));
    REQUIRE(t.nodes().size() == 3);
    CHECK(t.has_diamonds());
    CHECK(tables(t, t.copy_order()) == std::vector<std::string>{"customer", "rental", "payment"});
    CHECK(tables(t, t.delete_order()) == std::vector<std::string>{"payment", "rental", "customer"});
    const auto& pay = t.nodes()[static_cast<size_t>(t.index_of("payment"))];
    REQUIRE(pay.also.size() == 1);
    REQUIRE(pay.edges().size() == 2);
    // The first relation in config order is the primary path.
    int primary = customer_edge_first ? 0 : t.index_of("rental");
    CHECK(pay.parent == primary);
    CHECK(pay.edges()[0].parent == primary);
    CHECK(pay.depth == 2);
    CHECK(t.reaches(t.index_of("payment"), 0));
    CHECK(t.reaches(t.index_of("payment"), t.index_of("rental")));
    CHECK_FALSE(t.reaches(t.index_of("rental"), t.index_of("payment")));
  }
}

TEST_CASE("graph: render draws a diamond under both parents") {
  Tree t(sakila(false));
  CHECK(t.render() ==
        "customer (root)\n"
        "|-- rental (customer_id -> customer.primary key)\n"
        "|   `-- payment (rental_id -> rental.primary key) (also under customer)\n"
        "`-- payment (customer_id -> customer.primary key) (also under rental)\n");
  std::string plan = t.render_plan();
  CHECK(plan.find("graph:\n") == 0);
  CHECK(plan.find("copy order (parents first):    customer -> rental -> payment\n") != std::string::npos);
  CHECK(plan.find("delete order (children first): payment -> rental -> customer\n") != std::string::npos);
  CHECK(plan.find("rule: ") != std::string::npos);
  CHECK(Tree(shop()).render_plan().find("rule: ") == std::string::npos);
}

TEST_CASE("graph: a deeper diamond keeps every table after all of its parents") {
  // orders -> a -> b -> d, orders -> c -> d, d listed under c first.
  Tree t(job({rel("d", {"c_id"}, "c"), rel("a", {"o"}), rel("b", {"a_id"}, "a"), rel("c", {"o"}),
              rel("d", {"b_id"}, "b")}));
  auto order = tables(t, t.copy_order());
  auto pos = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(pos("d") == 4);
  CHECK(pos("b") > pos("a"));
  CHECK(t.nodes()[static_cast<size_t>(t.index_of("d"))].depth == 3);
}

TEST_CASE("graph: two relations to the same parent over different columns are two edges") {
  Tree t(job({rel("flights", {"from_id"}, "orders"), rel("flights", {"to_id"}, "orders")}));
  CHECK(t.nodes()[1].edges().size() == 2);
}

TEST_CASE("graph: a cycle through a second parent is refused with the reason") {
  Job j = job({rel("a", {"o"}), rel("b", {"a_id"}, "a"), rel("a", {"b_id"}, "b")});
  std::string msg = message_of<ConfigError>([&] { Tree t(j); });
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK(msg.find("another batch") != std::string::npos);
}

TEST_CASE("graph: a self-reference is refused with the reason") {
  Job j = job({rel("employees", {"dept_id"}), rel("employees", {"manager_id"}, "employees")});
  std::string msg = message_of<ConfigError>([&] { Tree t(j); });
  CHECK(msg.find("self-reference") != std::string::npos);
  CHECK(msg.find("archived later") != std::string::npos);
}

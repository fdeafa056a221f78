// Owns the SQL that finds the roots an outside RESTRICT / NO ACTION reference holds (see held_roots.h).
#include "app/held_roots.h"

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

// `a.x = b.y AND ...` over two column lists of one length.
std::string equal_columns(const std::string& left, const std::vector<std::string>& lcols, const std::string& right,
                          const std::vector<std::string>& rcols) {
  std::string out;
  for (size_t k = 0; k < lcols.size() && k < rcols.size(); ++k) {
    if (k) out += " AND ";
    out += fmt::format("{}.{} = {}.{}", left, sql::ident(lcols[k]), right, sql::ident(rcols[k]));
  }
  return out;
}

// The parent columns node `n`'s primary edge joins to.
const std::vector<std::string>& parent_columns(const plan::Node& n, const std::vector<schema::TableInfo>& tables) {
  return n.references.empty() ? tables[static_cast<size_t>(n.parent)].primary_key : n.references;
}

std::string count_of(const std::optional<std::string>& v) { return v.value_or("0"); }

}  // namespace

std::string OutsideReference::label(const std::string& source_database) const {
  std::string table = ascii_lower(fk.database) == ascii_lower(source_database) ? fk.table : fk.database + "." + fk.table;
  return table + "." + fk.name;
}

std::vector<OutsideReference> outside_references(const plan::Tree& tree, const std::vector<schema::TableInfo>& tables,
                                                 const std::string& database) {
  std::vector<OutsideReference> out;
  for (size_t i = 0; i < tables.size(); ++i) {
    for (const auto& fk : tables[i].referenced_by) {
      bool in_job = ascii_lower(fk.database) == ascii_lower(database) && tree.index_of(fk.table) >= 0;
      if (!in_job && fk.restricts()) out.push_back({fk, static_cast<int>(i)});
    }
  }
  return out;
}

std::string held_condition(const OutsideReference& ref, const plan::Tree& tree,
                           const std::vector<schema::TableInfo>& tables, const std::string& database) {
  const std::string root = sql::qualified(database, tree.root().table);
  const std::string outside = sql::qualified(ref.fk.database, ref.fk.table);
  if (ref.node == 0) {
    return fmt::format("EXISTS (SELECT 1 FROM {} AS ga_o WHERE {})", outside,
                       equal_columns("ga_o", ref.fk.columns, root, ref.fk.ref_columns));
  }
  // The referenced table, then its first parents up to (not including) the root, which the enclosing query holds.
  std::string from, on_root;
  size_t step = 0;
  for (int n = ref.node; n > 0; n = tree.nodes()[static_cast<size_t>(n)].parent, ++step) {
    const plan::Node& node = tree.nodes()[static_cast<size_t>(n)];
    std::string alias = fmt::format("ga_h{}", step);
    std::string parent = node.parent == 0 ? root : fmt::format("ga_h{}", step + 1);
    std::string join = equal_columns(alias, node.foreign_key, parent, parent_columns(node, tables));
    std::string table = sql::qualified(database, node.table);
    if (step == 0) from = fmt::format("{} AS {}", table, alias);
    else from += fmt::format(" JOIN {} AS {} ON {}", table, alias, on_root);
    on_root = join;
  }
  return fmt::format("EXISTS (SELECT 1 FROM {} WHERE {} AND EXISTS (SELECT 1 FROM {} AS ga_o WHERE {}))", from,
                     on_root, outside, equal_columns("ga_o", ref.fk.columns, "ga_h0", ref.fk.ref_columns));
}

HeldSample sample_held(db::Connection& source, const config::Job& job, const OutsideReference& ref,
                       const plan::Tree& tree, const std::vector<schema::TableInfo>& tables, const std::string& database,
                       unsigned long long limit) {
  db::RowSet r = source.query(fmt::format(
      "SELECT COUNT(*), COALESCE(SUM(ga_h), 0) FROM (SELECT {} AS ga_h FROM {} WHERE ({}) LIMIT {}) AS ga_sample",
      held_condition(ref, tree, tables, database), sql::qualified(database, tree.root().table), job.where, limit));
  HeldSample s;
  s.looked_at = std::stoull(count_of(r.get(0, 0)));
  s.held = std::stoull(count_of(r.get(0, 1)));
  s.whole = s.looked_at < limit;
  return s;
}

HeldCounts count_held(db::Connection& source, const config::Job& job, const std::vector<OutsideReference>& refs,
                      const plan::Tree& tree, const std::vector<schema::TableInfo>& tables,
                      const std::string& database) {
  std::string sums;
  std::vector<std::string> conditions;
  for (const auto& ref : refs) {
    conditions.push_back(held_condition(ref, tree, tables, database));
    sums += fmt::format(", COALESCE(SUM({}), 0)", conditions.back());
  }
  std::string any = conditions.empty() ? "0" : "(" + join(conditions, ") OR (") + ")";
  db::RowSet r = source.query(fmt::format("SELECT COUNT(*), COALESCE(SUM({}), 0){} FROM {} WHERE ({})", any, sums,
                                          sql::qualified(database, tree.root().table), job.where));
  HeldCounts c;
  c.roots = std::stoull(count_of(r.get(0, 0)));
  c.blocked = std::stoull(count_of(r.get(0, 1)));
  for (size_t i = 0; i < refs.size(); ++i) c.held.push_back(std::stoull(count_of(r.get(0, i + 2))));
  return c;
}

std::string not_held(const std::vector<OutsideReference>& refs, const plan::Tree& tree,
                     const std::vector<schema::TableInfo>& tables, const std::string& database) {
  if (refs.empty()) return "1";
  std::vector<std::string> conditions;
  for (const auto& ref : refs) conditions.push_back(held_condition(ref, tree, tables, database));
  return "NOT ((" + join(conditions, ") OR (") + "))";
}

}  // namespace goarchive::app

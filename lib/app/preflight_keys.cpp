// Owns preflight's foreign-key checks around a job (see preflight_keys.h).
#include "app/preflight_keys.h"

#include <map>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::app {

std::string relation_block(const std::string& job, const schema::ForeignKey& fk, const schema::TableInfo& parent) {
  auto list = [](const std::vector<std::string>& cols) {
    std::vector<std::string> q;
    for (const auto& c : cols) q.push_back("\"" + c + "\"");
    std::string out = "[";  // appended, not "[" + ...: GCC 12 warns (-Wrestrict) on that form at -O2
    out += join(q, ", ");
    out += ']';
    return out;
  };
  std::string out = fmt::format("[[jobs.{}.relations]] table = \"{}\" parent = \"{}\" foreign_key = {}", job, fk.table,
                                parent.name, list(fk.columns));
  if (!same_columns(fk.ref_columns, parent.primary_key)) out += " references = " + list(fk.ref_columns);
  return out;
}

std::string foreign_keys_to(const schema::TableInfo& child, const std::string& parent) {
  std::vector<std::string> out;
  for (const auto& fk : child.references) {
    if (ascii_lower(fk.ref_database) == ascii_lower(child.database) && ascii_lower(fk.ref_table) == ascii_lower(parent)) {
      out.push_back(fmt::format("{} ({})", fk.name, join(fk.columns, ", ")));
    }
  }
  return join(out, ", ");
}

namespace {

class KeyChecker {
public:
  KeyChecker(const config::Job& job, const plan::Tree& tree, const std::vector<schema::TableInfo>& tables, bool deletes)
      : m_job(job), m_tree(tree), m_tables(tables), m_deletes(deletes) {}

  std::string relation_for(const schema::ForeignKey& fk, const schema::TableInfo& parent) const {
    return relation_block(m_job.name, fk, parent);
  }

  std::vector<KeyFinding> run() {
    std::map<std::string, size_t> in_tree;
    for (size_t i = 0; i < m_tables.size(); ++i) {
      const auto& t = m_tables[i];
      in_tree[ascii_lower(t.database) + "." + ascii_lower(t.name)] = i;
    }
    auto key = [](const std::string& db, const std::string& t) { return ascii_lower(db) + "." + ascii_lower(t); };
    for (size_t i = 0; i < m_tables.size(); ++i) {
      const auto& t = m_tables[i];
      if (m_deletes) {
        for (const auto& fk : t.referenced_by) {
          if (!in_tree.count(key(fk.database, fk.table))) check_outside_reference(fk, t);
        }
      }
      // A relation whose foreign_key is mistyped explains its parent's unmatched foreign keys: the one finding.
      std::vector<bool> explained(m_tables.size(), false);
      for (const auto& e : m_tree.nodes()[i].edges()) explained[static_cast<size_t>(e.parent)] = mistyped(i, e);
      // Every foreign key between two tables of the job must be an edge of its graph.
      for (const auto& fk : t.references) {
        auto it = in_tree.find(key(fk.ref_database, fk.ref_table));
        if (it == in_tree.end()) continue;  // an upstream parent outside the job (e.g. film_actor -> actor): fine
        if (explained[it->second]) continue;
        const auto& n = m_tree.nodes()[i];
        bool is_edge = false;
        for (const auto& e : n.edges()) {
          is_edge = is_edge || (static_cast<size_t>(e.parent) == it->second && same_columns(fk.columns, e.foreign_key));
        }
        if (!is_edge) check_inner_reference(fk, i, it->second);
      }
    }
    return std::move(m_failures);
  }

  // True when relation `e` of table `child` is no foreign key the child declares to that parent while it declares
  // some: a mistyped foreign_key. A column that does not exist is preflight's finding (check_relation); an existing
  // one is this one's, naming the foreign keys that do exist.
  bool mistyped(size_t child, const plan::Edge& e) {
    const auto& t = m_tables[child];
    const auto& p = m_tables[static_cast<size_t>(e.parent)];
    std::string declared = foreign_keys_to(t, p.name);
    if (declared.empty()) return false;  // a relation the schema does not declare: fine
    for (const auto& c : e.foreign_key) {
      if (!t.column(c)) return true;
    }
    for (const auto& fk : t.references) {
      if (ascii_lower(fk.ref_table) == ascii_lower(p.name) && same_columns(fk.columns, e.foreign_key)) return false;
    }
    m_failures.push_back({fmt::format("relation {}: foreign_key ({}) is not a foreign key of {} to {}: the foreign keys "
                                      "of {} that reference {} are {}; fix foreign_key in [[jobs.{}.relations]]",
                                      t.name, join(e.foreign_key, ", "), name(t), p.name, t.name, p.name, declared,
                                      m_job.name),
                          true});
    return true;
  }

  // A foreign key from a table outside the job into table `t` of it. RESTRICT / NO ACTION: fine, a root whose tree
  // is still referenced stays in the source (blocked, under the delete's locks). The other rules would change rows
  // that were never copied.
  void check_outside_reference(const schema::ForeignKey& fk, const schema::TableInfo& t) {
    if (fk.restricts()) return;
    std::string effect = fk.delete_rule == "CASCADE" ? "delete" : fk.delete_rule == "SET NULL" ? "set to NULL the "
                                                                                                 "foreign key of"
                                                                                               : "reset to its default "
                                                                                                 "the foreign key of";
    std::string advice =
        ascii_lower(fk.database) == ascii_lower(t.database)
            ? fmt::format("add {} to the job: {}; or archive {} first", fk.table, relation_for(fk, t), fk.table)
            : fmt::format("archive {}.{} first (it is in another database, so it cannot join the job)", fk.database,
                          fk.table);
    m_failures.push_back({fmt::format("foreign key {} on {}.{} references {} ON DELETE {}: deleting {} rows would {} {} rows that were "
                     "never copied; {}",
                     fk.name, fk.database, fk.table, name(t), fk.delete_rule, t.name, effect, fk.table, advice)});
  }

  // A foreign key between two tables of the job that is not an edge of its graph: a further parent (a diamond) when
  // it keeps the graph acyclic; a self-reference or a cycle cannot be archived in order.
  void check_inner_reference(const schema::ForeignKey& fk, size_t child, size_t parent) {
    const auto& t = m_tables[child];
    const auto& p = m_tables[parent];
    std::string why = "a row's parent may be in another batch or may itself be archived later, so no copy order "
                      "(parents first) and delete order (children first) holds for every row";
    if (child == parent) {
      m_failures.push_back({fmt::format("foreign key {} of {} ({}) references {} itself: goarchive refuses self-references, because {}; "
                       "it cannot archive {} while the foreign key exists: drop it (ALTER TABLE {} DROP FOREIGN KEY {}) "
                       "or archive {} another way",
                       fk.name, name(t), join(fk.columns, ", "), t.name, why, t.name, sql::qualified(t.database, t.name),
                       sql::ident(fk.name), t.name)});
      return;
    }
    if (m_tree.reaches(static_cast<int>(parent), static_cast<int>(child))) {
      m_failures.push_back({fmt::format("foreign key {} of {} ({}) references {}, which is below {} in the job: the two form a cycle, "
                       "and goarchive refuses cycles, because {}; it cannot archive these tables while the foreign key "
                       "exists: drop it (ALTER TABLE {} DROP FOREIGN KEY {}) or archive them another way",
                       fk.name, name(t), join(fk.columns, ", "), p.name, t.name, why,
                       sql::qualified(t.database, t.name), sql::ident(fk.name))});
      return;
    }
    m_failures.push_back({fmt::format("foreign key {} of {} ({}) references {}.{}, a table of the job, but the job has no such relation; "
                     "a row with a second parent inside the job could be deleted before that parent. Declare it as a "
                     "further parent of {}: {}",
                     fk.name, name(t), join(fk.columns, ", "), fk.ref_database, fk.ref_table, t.name,
                     relation_for(fk, p))});
  }


private:
  std::string name(const schema::TableInfo& t) const { return t.database + "." + t.name; }

  const config::Job& m_job;
  const plan::Tree& m_tree;
  const std::vector<schema::TableInfo>& m_tables;
  bool m_deletes;
  std::vector<KeyFinding> m_failures;
};

}  // namespace

std::vector<KeyFinding> foreign_key_findings(const config::Job& job, const plan::Tree& tree,
                                             const std::vector<schema::TableInfo>& tables, bool deletes) {
  return KeyChecker(job, tree, tables, deletes).run();
}

}  // namespace goarchive::app

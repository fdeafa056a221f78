// locks and discover: the lock names of a job with their holders, and a relations block from the source's
// foreign keys. Both only read.
#include <algorithm>
#include <map>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/json.h"
#include "app/name_hints.h"
#include "app/preflight.h"
#include "app/session.h"
#include "plan/sql.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::app {

namespace {

// A root table that does not exist is a usage error (exit 2) naming the close matches: an empty tree would look
// like a table without children.
void require_table(db::Connection& src, const std::string& database, const std::string& table) {
  if (!schema::database_exists(src, database)) {
    throw ConfigError(fmt::format("database {} does not exist on {}; check source.database", database, src.label()));
  }
  db::RowSet r = src.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                           sql::quote(database) + " AND TABLE_TYPE = 'BASE TABLE'");
  for (size_t i = 0; i < r.rows(); ++i) {
    if (r.text(i, 0) == table) return;
  }
  std::string msg = fmt::format("table {} not found in database {}; {}", table, database, table_hint(src, database, table));
  throw ConfigError(msg);
}

// What discover builds: the job's tables breadth-first from the root, each table's parents in the job, the
// relations block and the notes printed after it.
struct Discovery {
  std::string database;
  std::string root;
  std::vector<std::string> tree;
  std::map<std::string, std::vector<std::string>> parents;
  std::string out;
  std::vector<std::string> notes;
};

// True when `to` is `from` or one of its parents in the job, transitively.
bool reaches(Discovery& d, const std::string& from, const std::string& to) {
  if (from == to) return true;
  for (const auto& p : d.parents[from]) {
    if (reaches(d, p, to)) return true;
  }
  return false;
}

// One [[jobs.archive_ROOT.relations]] block for `fk`; its table gets `fk`'s parent.
void add_relation(Discovery& d, const schema::ForeignKey& fk) {
  std::string cols = fk.columns.size() == 1 ? json_quote(fk.columns[0]) : [&] {
    std::string l = "[";
    for (size_t k = 0; k < fk.columns.size(); ++k) l += (k ? ", " : "") + json_quote(fk.columns[k]);
    return l + "]";
  }();
  d.out += fmt::format("\n[[jobs.archive_{}.relations]]\ntable = {}\n", d.root, json_quote(fk.table));
  if (fk.ref_table != d.root || !d.parents[fk.table].empty()) {
    d.out += fmt::format("parent = {}\n", json_quote(fk.ref_table));
  }
  d.out += fmt::format("foreign_key = {}\n", cols);
  d.parents[fk.table].push_back(fk.ref_table);
}

// Breadth-first from the root over foreign keys that point at tables already in the job. A table reached again
// through another parent gets a further relation (a diamond), unless that would close a cycle.
void walk(Discovery& d, const std::vector<schema::ForeignKey>& fks) {
  for (size_t i = 0; i < d.tree.size(); ++i) {
    for (const auto& fk : fks) {
      if (fk.ref_table != d.tree[i] || fk.ref_database != d.database) continue;
      if (fk.database != d.database) continue;  // another database: reported below as BLOCKS
      if (fk.table == d.tree[i]) {
        d.notes.push_back(fmt::format("# REFUSED: {}.{} references {} itself ({}): goarchive refuses self-references "
                                      "(a row's parent may be in another batch or archived later); drop that key",
                                      fk.table, join(fk.columns, ","), fk.ref_table, fk.name));
      } else if (!d.parents.count(fk.table)) {
        d.tree.push_back(fk.table);
        add_relation(d, fk);
      } else if (reaches(d, fk.ref_table, fk.table)) {
        d.notes.push_back(fmt::format("# REFUSED: {}.{} references {} ({}), which is below {} in the job: a cycle, "
                                      "which goarchive refuses; drop that key",
                                      fk.table, join(fk.columns, ","), fk.ref_table, fk.name, fk.table));
      } else {
        add_relation(d, fk);  // a further parent: the row moves only when every parent it has is archived too
      }
    }
  }
}

// Foreign keys from outside the job into it: a note (RESTRICT: the root stays, blocked) or a refusal (BLOCKS).
void note_outside_references(Discovery& d, const std::vector<schema::ForeignKey>& fks) {
  for (const auto& fk : fks) {
    bool outside = fk.database != d.database || !d.parents.count(fk.table);
    if (d.parents.count(fk.ref_table) && outside && fk.ref_database == d.database) {
      d.notes.push_back(
          fk.restricts()
              ? fmt::format("# NOTE: {}.{} ({}) references {} from outside the job ({}, ON DELETE {}): a root whose "
                            "rows it still references stays in the source, reported as blocked",
                            fk.database, fk.table, join(fk.columns, ","), fk.ref_table, fk.name, fk.delete_rule)
              : fmt::format("# BLOCKS: {}.{} ({}) references {} from outside the job ({}, ON DELETE {}); archive or "
                            "purge refuses this job until {}.{} is archived first",
                            fk.database, fk.table, join(fk.columns, ","), fk.ref_table, fk.name, fk.delete_rule,
                            fk.database, fk.table));
    }
  }
}

}  // namespace

int locks(const config::Config& cfg, const std::string& name) {
  const config::Job& job = cfg.job(name);
  plan::Tree tree(job);
  auto dst = connect(cfg.destination, "destination (locks)");
  auto src = connect(cfg.source, "source (locks)");
  auto show = [](db::Connection& c, std::vector<locks::NamedLock> ls, const char* server) {
    // Names come from the server that holds them, with its own SHA2/LOWER.
    std::string q = "SELECT ";
    for (size_t i = 0; i < ls.size(); ++i) {
      if (i) q += ", ";
      q += locks::server_expression(ls[i].kind, sql::quote(ls[i].a), sql::quote(ls[i].b));
    }
    db::RowSet r = c.query(q);
    for (size_t i = 0; i < ls.size(); ++i) {
      std::string lock_name = r.text(0, i);
      auto h = locks::holder_of(c, lock_name);
      std::cout << fmt::format("{}  {:<11} {:<60} {}\n", lock_name, server, ls[i].description,
                               h ? fmt::format("held by connection {}", h) : "free");
    }
  };
  std::cout << fmt::format("{:<44}  {:<11} {:<60} {}\n", "LOCK", "SERVER", "STANDS FOR", "HOLDER");
  show(*dst, {schema_lock(cfg)}, "destination");
  show(*dst, job_locks(cfg, job), "destination");
  show(*src, table_locks(cfg, tree), "source");
  return 0;
}

int discover(const config::Config& cfg, const std::string& root_table) {
  auto src = connect(cfg.source, "source (discover)");
  require_table(*src, cfg.source.database, root_table);
  auto fks = schema::foreign_keys_in(*src, cfg.source.database);
  Discovery d{cfg.source.database, root_table, {root_table}, {{root_table, {}}}, "", {}};
  d.out = fmt::format("# relations of the job under {}.{} (from the source's foreign keys)\n"
                      "[jobs.archive_{}]\nroot_table = {}\nwhere = \"<condition on {}>\"\n",
                      cfg.source.database, root_table, root_table, json_quote(root_table), root_table);
  walk(d, fks);
  note_outside_references(d, fks);
  std::cout << d.out;
  for (const auto& n : d.notes) std::cout << n << "\n";
  return 0;
}

}  // namespace goarchive::app

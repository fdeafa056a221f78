// dry-run: preflight, the SQL a batch sends and how many rows each table would move; writes nothing anywhere.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/json.h"
#include "app/held_roots.h"
#include "app/preflight.h"
#include "app/preflight_restore.h"
#include "app/session.h"
#include "plan/sql.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::app {

namespace {

// `SELECT COUNT(*)` of the rows of one table that belong to roots matching `where` and `movable` (an SQL condition
// on the root table, not aliased), joining up to the root.
std::string count_sql(const std::string& db, const config::Job& job, const plan::Tree& tree,
                      const std::vector<pipeline::TableMeta>& tables, int node, const std::string& movable) {
  std::vector<int> path;
  for (int n = node; n >= 0; n = tree.nodes()[static_cast<size_t>(n)].parent) path.push_back(n);
  std::string from = fmt::format("{} AS t{}", sql::qualified(db, tree.nodes()[static_cast<size_t>(node)].table), node);
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    int child = path[i], parent = path[i + 1];
    const auto& cm = tables[static_cast<size_t>(child)];
    const auto& pm = tables[static_cast<size_t>(parent)];
    std::string on;
    for (size_t k = 0; k < cm.fk_idx.size(); ++k) {
      if (k) on += " AND ";
      on += fmt::format("t{}.{} = t{}.{}", child, sql::ident(cm.columns[cm.fk_idx[k]]), parent,
                        sql::ident(pm.columns[cm.parent_ref_idx[k]]));
    }
    from += fmt::format(" JOIN {} AS t{} ON {}", sql::qualified(db, pm.node.table), parent, on);
  }
  // The condition is written for the root table; it is evaluated in a subquery on the root table (not aliased, so
  // that `movable` names it as it is).
  const auto& root = tables[0];
  const std::string root_table = sql::qualified(db, root.node.table);
  std::string keys;
  for (size_t k = 0; k < root.key_cols.size(); ++k) {
    keys += (k ? " AND " : "") + fmt::format("{0}.{1} = t0.{1}", root_table, sql::ident(root.key_cols[k]));
  }
  if (node == 0) return fmt::format("SELECT COUNT(*) FROM {} WHERE ({}) AND {}", root_table, job.where, movable);
  return fmt::format("SELECT COUNT(*) FROM {} WHERE EXISTS (SELECT 1 FROM {} WHERE {} AND ({}) AND {})", from,
                     root_table, keys, job.where, movable);
}

// The roots matching where, and those a RESTRICT / NO ACTION foreign key from outside the job holds (a run leaves
// them in the source, blocked): only in the modes that delete.
struct Roots {
  std::vector<OutsideReference> refs;
  HeldCounts counts;
  std::string movable = "1";
};

Roots count_roots(const config::Config& cfg, const config::Job& job, const plan::Tree& tree, pipeline::Mode mode,
                  const PreflightReport& pf, db::Connection& src) {
  Roots r;
  const std::string& db = cfg.source.database;
  if (mode != pipeline::Mode::copy_only) r.refs = outside_references(tree, pf.source_tables, db);
  r.counts = count_held(src, job, r.refs, tree, pf.source_tables, db);
  r.movable = not_held(r.refs, tree, pf.source_tables, db);
  return r;
}

// "2 would move, 7 blocked by InvoiceLine.FK_InvoiceLineInvoiceId" (with several references, each one's count).
std::string roots_line(const Roots& r, const std::string& db) {
  std::string line = fmt::format("{} would move", r.counts.roots - r.counts.blocked);
  std::vector<std::string> by;
  for (size_t i = 0; i < r.refs.size(); ++i) {
    if (r.counts.held[i] == 0) continue;
    by.push_back(r.refs[i].label(db) + (r.refs.size() > 1 ? fmt::format(" ({})", r.counts.held[i]) : ""));
  }
  if (r.counts.blocked > 0) line += fmt::format(", {} blocked by {}", r.counts.blocked, join(by, ", "));
  return line;
}

}  // namespace

int dry_run(const config::Config& cfg, const RunOptions& options, Format format) {
  // restore reads the archive with its own --where, and writes the source: the ends swapped.
  const bool restore = options.mode == Mode::restore;
  config::Job job = cfg.job(options.job);
  if (restore) job.where = options.where;
  plan::Tree tree(job);
  pipeline::Mode mode = to_pipeline(static_cast<int>(options.mode));
  auto src = connect(cfg.source, "source (dry-run)", sql::tag(job.name, 0));
  std::unique_ptr<db::Connection> dst;
  if (mode != pipeline::Mode::purge) dst = connect(cfg.destination, "destination (dry-run)", sql::tag(job.name, 0));
  // Read-only sessions: nothing can be written, on either server, not even the tracking schema.
  src->execute("SET SESSION TRANSACTION READ ONLY");
  if (dst) dst->execute("SET SESSION TRANSACTION READ ONLY");
  PreflightReport pf = preflight(cfg, job, tree, mode, *src, dst.get(), Purpose::dry_run);
  if (restore) check_restore(cfg, job, tree, options.keep_archive, *src, *dst, pf);
  require(pf, job.name);
  auto tables = pipeline::describe(tree, pf.source_tables, job, cfg.source.database, cfg.destination.database);
  if (restore) tables = pipeline::reversed(std::move(tables));
  tracking::Registry registry(cfg.destination.job_schema);
  db::Connection& read = restore ? *dst : *src;
  pipeline::Engine engine(mode, job, tables, read, restore ? *src : dst ? *dst : *src, registry, 0, 0, "", {});
  engine.use_commit_proofs(cfg.source.database);  // only named in the statements it shows; nothing is created
  if (restore && options.keep_archive) engine.keep_archive();
  const std::string& read_db = restore ? cfg.destination.database : cfg.source.database;
  Roots roots;
  if (restore) {
    roots.counts.roots = std::stoull(read.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE ({})",
                                                             sql::qualified(read_db, job.root_table), job.where))
                                         .value_or("0"));
  } else {
    roots = count_roots(cfg, job, tree, mode, pf, *src);
  }
  std::vector<std::pair<std::string, unsigned long long>> counts;
  for (int n : tree.copy_order()) {
    auto c = read.scalar(count_sql(read_db, job, tree, tables, n, roots.movable));
    counts.emplace_back(tree.nodes()[static_cast<size_t>(n)].table, std::stoull(c.value_or("0")));
  }
  const std::vector<pipeline::PartitionChoice> parts = engine.partition_plan();
  if (format == Format::json) {
    Json out = Json::object();
    out.set("schema_version", Json(1));
    out.set("job", Json(job.name));
    out.set("mode", Json(to_string(options.mode)));
    Json t = Json::array();
    for (const auto& [name, n] : counts) {
      Json o = Json::object();
      o.set("table", Json(name));
      o.set("rows", Json(n));
      t.push(o);
    }
    out.set("tables", t);
    Json rj = Json::object();
    rj.set("match_where", Json(roots.counts.roots));
    rj.set("would_move", Json(roots.counts.roots - roots.counts.blocked));
    rj.set("blocked", Json(roots.counts.blocked));
    Json by = Json::array();
    for (size_t i = 0; i < roots.refs.size(); ++i) {
      Json o = Json::object();
      o.set("foreign_key", Json(roots.refs[i].fk.name));
      o.set("table", Json(roots.refs[i].fk.database + "." + roots.refs[i].fk.table));
      o.set("roots", Json(roots.counts.held[i]));
      by.push(o);
    }
    rj.set("blocked_by", by);
    out.set("roots", rj);
    Json pj = Json::array();
    for (const auto& c : parts) {
      Json o = Json::object();
      o.set("partition", Json(c.name));
      o.set("less_than", Json(c.description));
      o.set("rows_estimate", Json(c.rows_estimate));
      o.set("path", Json(c.route == pipeline::PartitionRoute::whole  ? "whole"
                         : c.route == pipeline::PartitionRoute::rows ? "rows"
                                                                     : "none"));
      o.set("reason", Json(c.reason));
      pj.push(o);
    }
    out.set("partitions", pj);
    Json s = Json::array();
    for (const auto& q : engine.sample_sql()) s.push(Json(q));
    out.set("sql", s);
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format("dry-run of {} job {}: preflight passed; nothing was written\n\n", to_string(options.mode),
                           job.name);
  std::cout << tree.render_plan();
  if (restore) {
    std::cout << fmt::format("\nrestore: the archive is read and {}, the source written; copy (into the source) "
                             "parent-first, removal (from the archive) child-first\narchived roots that match --where "
                             "(as of now): {}\n",
                             options.keep_archive ? "kept (--keep-archive)" : "emptied", roots.counts.roots);
  } else {
    std::cout << fmt::format("\nroots that match where (as of now): {}\n", roots_line(roots, cfg.source.database));
  }
  if (roots.counts.blocked > 0) {
    std::cout << "  (a foreign key from outside the job holds them: the run leaves them in the source; add its table "
                 "to the job, or archive it first; `goarchive validate` prints the relation)\n";
  }
  if (!parts.empty()) {
    std::cout << fmt::format("\npartitions of {} (whole: detached and {} as one piece; row path: row by row):\n",
                             job.root_table, mode == pipeline::Mode::purge ? "dropped" : "archived");
    for (const auto& c : parts) std::cout << "  " << pipeline::describe(c) << "\n";
  }
  std::cout << "\nrows that would move (as of now, along each table's first parent):\n";
  for (const auto& [name, n] : counts) std::cout << fmt::format("  {:<28} {:>12}\n", name, n);
  std::cout << "\nSQL per batch:\n";
  for (const auto& q : engine.sample_sql()) std::cout << q << ";\n";
  return 0;
}

}  // namespace goarchive::app

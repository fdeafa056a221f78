// Commands that read and never write: dry-run, validate, jobs, locks, discover; and jobs clear.
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
#include "app/preflight.h"
#include "app/session.h"
#include "plan/sql.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::app {

namespace {

// `SELECT COUNT(*)` of the rows of one table that belong to roots matching `where`, joining up to the root.
std::string count_sql(const config::Config& cfg, const config::Job& job, const plan::Tree& tree,
                      const std::vector<pipeline::TableMeta>& tables, int node) {
  const auto& db = cfg.source.database;
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
  // The condition is written for the root table; qualify it by evaluating it in a derived table of root keys.
  const auto& root = tables[0];
  std::string keys;
  for (size_t k = 0; k < root.key_cols.size(); ++k) {
    keys += (k ? " AND " : "") + fmt::format("r.{0} = t0.{0}", sql::ident(root.key_cols[k]));
  }
  if (node == 0) return fmt::format("SELECT COUNT(*) FROM {} WHERE ({})", sql::qualified(db, job.root_table), job.where);
  return fmt::format("SELECT COUNT(*) FROM {} WHERE EXISTS (SELECT 1 FROM {} AS r WHERE {} AND ({}))", from,
                     sql::qualified(db, job.root_table), keys, job.where);
}

// `validate -v`: key, value, origin in columns as wide as their widest cell, so that every row lines up.
std::string settings_table(const config::Config& cfg) {
  std::vector<std::array<std::string, 3>> rows;
  // A multi-line value (a where condition) would break the columns: its line breaks are shown escaped.
  auto shown = [](const std::string& v) {
    if (v.empty()) return std::string("\"\"");
    std::string out;
    for (char c : v) out += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
    return out;
  };
  for (const auto& [k, s] : cfg.settings) rows.push_back({k, shown(s.value), to_string(s.origin)});
  for (const auto* srv : {&cfg.source, static_cast<const config::ServerConfig*>(&cfg.destination)}) {
    rows.push_back({srv->role + ".password", srv->password.empty() ? "(none)" : "<redacted>",
                    srv->password_origin.empty() ? "default" : srv->password_origin});
  }
  size_t key_width = 0, value_width = 0;
  for (const auto& r : rows) {
    key_width = std::max(key_width, r[0].size());
    value_width = std::max(value_width, r[1].size());
  }
  std::string out = "effective settings (origin):\n";
  for (const auto& r : rows) {
    out += fmt::format("  {:<{}} {:<{}} ({})\n", r[0], key_width, r[1], value_width, r[2]);
  }
  return out;
}

// A root table that does not exist is a usage error (exit 2) naming the close matches: an empty tree would look
// like a table without children.
void require_table(db::Connection& src, const std::string& database, const std::string& table) {
  if (!schema::database_exists(src, database)) {
    throw ConfigError(fmt::format("database {} does not exist on {}; check source.database", database, src.label()));
  }
  db::RowSet r = src.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                           sql::quote(database) + " AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME");
  std::vector<std::string> names;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (r.cell(i, 0) == table) return;
    names.push_back(r.cell(i, 0));
  }
  std::string msg = fmt::format("table {} not found in database {}", table, database);
  auto close = close_matches(table, names);
  if (!close.empty()) {
    msg += "; " + did_you_mean(close);
  } else if (names.empty()) {
    msg += "; the database has no tables";
  } else {
    std::vector<std::string> some(names.begin(), names.begin() + static_cast<long>(std::min<size_t>(names.size(), 10)));
    msg += fmt::format("; its tables are: {}{}", join(some, ", "), names.size() > some.size() ? ", ..." : "");
  }
  throw ConfigError(msg);
}

constexpr size_t k_conflicts_shown = 5;

// The root key columns of a job for `jobs`: the config's primary_key, else the archived root table's primary
// key on the destination (the same as the source's); empty when neither is known.
std::vector<std::string> root_key_columns(const config::Config& cfg, db::Connection& dst, const std::string& job,
                                          const std::string& root_table) {
  auto it = cfg.jobs.find(job);
  if (it != cfg.jobs.end() && !it->second.primary_key.empty()) return it->second.primary_key;
  std::vector<std::string> out;
  try {
    db::RowSet r = dst.query(fmt::format(
        "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} "
        "AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
        sql::quote(cfg.destination.database), sql::quote(root_table)));
    for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.cell(i, 0));
  } catch (const db::DbError& e) {
    spdlog::debug("the primary key of {}.{}: {}", cfg.destination.database, root_table, e.what());
  }
  return out;
}

// A root key as an operator reads it: `orders (id) = (5)`, or `orders root key (5)` when the columns are not
// known; numbers bare, printable text quoted, anything else as a hex literal.
std::string name_root_key(const std::string& table, const std::vector<std::string>& columns,
                          const std::string& encoded) {
  std::vector<std::string> values;
  try {
    values = tracking::decode_key(encoded);
  } catch (const Error&) {
    return fmt::format("{} root key {} (undecodable)", table, sql::hex_literal(encoded));
  }
  std::vector<std::string> shown;
  for (const auto& v : values) {
    bool numeric = !v.empty() && v.size() < 40 && std::all_of(v.begin(), v.end(), [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '.';
    });
    bool printable = std::all_of(v.begin(), v.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u != 0x7f;
    });
    shown.push_back(numeric ? v : printable ? sql::quote(v) : sql::hex_literal(v));
  }
  std::string prefix = table.empty() ? "" : table + " ";
  if (columns.size() != values.size()) return fmt::format("{}root key ({})", prefix, join(shown, ", "));
  return fmt::format("{}({}) = ({})", prefix, join(columns, ", "), join(shown, ", "));
}

}  // namespace

int dry_run(const config::Config& cfg, const RunOptions& options, Format format) {
  const config::Job& job = cfg.job(options.job);
  plan::Tree tree(job);
  pipeline::Mode mode = to_pipeline(static_cast<int>(options.mode));
  auto src = connect(cfg.source, "source (dry-run)", sql::tag(job.name, 0));
  std::unique_ptr<db::Connection> dst;
  if (mode != pipeline::Mode::purge) dst = connect(cfg.destination, "destination (dry-run)", sql::tag(job.name, 0));
  // Read-only sessions: nothing can be written, on either server, not even the tracking schema.
  src->execute("SET SESSION TRANSACTION READ ONLY");
  if (dst) dst->execute("SET SESSION TRANSACTION READ ONLY");
  PreflightReport pf = preflight(cfg, job, tree, mode, *src, dst.get());
  require(pf, job.name);
  auto tables = pipeline::describe(tree, pf.source_tables, job, cfg.source.database, cfg.destination.database);
  tracking::Registry registry(cfg.destination.job_schema);
  pipeline::Engine engine(mode, job, tables, *src, dst ? *dst : *src, registry, 0, 0, "", {});
  std::vector<std::pair<std::string, unsigned long long>> counts;
  for (int n : tree.copy_order()) {
    auto c = src->scalar(count_sql(cfg, job, tree, tables, n));
    counts.emplace_back(tree.nodes()[static_cast<size_t>(n)].table, std::stoull(c.value_or("0")));
  }
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
    Json s = Json::array();
    for (const auto& q : engine.sample_sql()) s.push(Json(q));
    out.set("sql", s);
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format("dry-run of {} job {}: preflight passed; nothing was written\n\n", to_string(options.mode),
                           job.name);
  std::cout << tree.render_plan() << "\nrows that would move (as of now, along each table's first parent):\n";
  for (const auto& [name, n] : counts) std::cout << fmt::format("  {:<28} {:>12}\n", name, n);
  std::cout << "\nSQL per batch:\n";
  for (const auto& q : engine.sample_sql()) std::cout << q << ";\n";
  return 0;
}

int validate(const config::Config& cfg, const std::optional<std::string>& only, int verbosity, Format format) {
  std::vector<std::string> names;
  if (only) names.push_back(cfg.job(*only).name);
  else for (const auto& [n, j] : cfg.jobs) names.push_back(n);
  if (verbosity > 0 && format == Format::text) std::cout << settings_table(cfg);
  std::map<std::string, std::vector<std::string>> failures;
  std::unique_ptr<db::Connection> src, dst;
  // A configuration error (exit 2) stays one; a server that cannot be reached is a finding of validate.
  try {
    src = connect(cfg.source, "source (validate)");
    src->execute("SET SESSION TRANSACTION READ ONLY");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    failures["(servers)"].push_back(e.what());
  }
  try {
    dst = connect(cfg.destination, "destination (validate)");
    dst->execute("SET SESSION TRANSACTION READ ONLY");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    failures["(servers)"].push_back(e.what());
  }
  // A job is checked only when both servers answered: preflight needs the source, and the destination for its
  // half of the checks. An unchecked job is never reported "ok".
  std::string unchecked_why;
  if (!src && !dst) unchecked_why = "neither server could be reached";
  else if (!src) unchecked_why = "the source could not be reached";
  else if (!dst) unchecked_why = "the destination could not be reached";
  for (const auto& name : names) {
    const config::Job& job = cfg.jobs.at(name);
    plan::Tree tree(job);  // a configuration error: exit 2, like every other command
    try {
      if (src) {
        auto pf = preflight(cfg, job, tree, pipeline::Mode::archive, *src, dst.get());
        for (auto& f : pf.failures) failures[name].push_back(f);
      }
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      failures[name].push_back(e.what());
    }
  }
  size_t total = 0;
  for (const auto& [k, v] : failures) total += v.size();
  if (format == Format::json) {
    Json out = Json::object();
    out.set("schema_version", Json(1));
    out.set("ok", Json(total == 0));
    Json jobs = Json::array();
    for (const auto& name : names) {
      Json o = Json::object();
      o.set("job", Json(name));
      o.set("checked", Json(unchecked_why.empty()));
      o.set("ok", Json(unchecked_why.empty() && failures[name].empty()));
      Json f = Json::array();
      for (const auto& x : failures[name]) f.push(Json(x));
      o.set("failures", f);
      jobs.push(o);
    }
    out.set("jobs", jobs);
    Json srv = Json::array();
    for (const auto& x : failures["(servers)"]) srv.push(Json(x));
    out.set("server_failures", srv);
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& name : names) {
      size_t n = failures[name].size();
      if (!unchecked_why.empty()) {
        std::string partial = src && n > 0 ? fmt::format("; the source checks found {} problem{}", n, n == 1 ? "" : "s")
                                           : "";
        std::cout << fmt::format("job {}: NOT CHECKED ({}{})\n", name, unchecked_why, partial);
      } else if (n == 0) {
        std::cout << fmt::format("job {}: ok (config and every preflight check)\n", name);
      } else {
        std::cout << fmt::format("job {}: {} problem{} (listed on stderr)\n", name, n, n == 1 ? "" : "s");
      }
    }
  }
  if (total == 0) return 0;
  std::string msg = fmt::format("validate found {} problem{}:", total, total == 1 ? "" : "s");
  for (const auto& [k, v] : failures) {
    for (const auto& f : v) msg += fmt::format("\n  [{}] {}", k, f);
  }
  if (format == Format::json) return k_exit_failed;
  throw PreflightError(msg);
}

int jobs_list(const config::Config& cfg, Format format) {
  auto dst = connect(cfg.destination, "destination (jobs)");
  tracking::Registry registry(cfg.destination.job_schema);
  if (!registry.ready(*dst)) {
    if (format == Format::json) {
      std::cout << R"({"schema_version":1,"jobs":[]})" << "\n";
    } else {
      std::cout << fmt::format("no tracking registry in {} on {} yet: no job has run there\n",
                               cfg.destination.job_schema, dst->label());
    }
    return 0;
  }
  db::RowSet r = dst->query(fmt::format(
      "SELECT j.name, j.command, CONCAT(j.source_host, ':', j.source_port, '/', j.source_database), j.status, "
      "IFNULL(DATE_FORMAT(j.heartbeat_at, '%Y-%m-%d %H:%i:%s'), ''), "
      "IFNULL(j.status = 'running' AND j.heartbeat_at > NOW(6) - INTERVAL 60 SECOND, 0), "
      "(SELECT IFNULL(SUM(b.roots), 0) FROM {0} b WHERE b.job_id = j.id AND b.unfinished = 1), "
      "(SELECT GROUP_CONCAT(t.table_name ORDER BY t.table_name SEPARATOR ',') FROM {1} t WHERE t.job_id = j.id), "
      "IFNULL(r.status, ''), IFNULL(r.exit_code, ''), IFNULL(r.reason, ''), IFNULL(r.summary, ''), IFNULL(r.id, 0), "
      "IS_USED_LOCK({4}) IS NOT NULL, j.id, j.root_table "
      "FROM {2} j LEFT JOIN {3} r ON r.id = j.run_id ORDER BY j.name",
      registry.table("batches"), registry.table("job_tables"), registry.table("jobs"), registry.table("runs"),
      // The job lock of each row, named by this server (locks/names.h): a running job's process holds it.
      locks::server_expression(locks::LockKind::job, sql::quote(cfg.destination.job_schema), "j.name")));
  // A job marked running is live only while its process holds the job lock: a SIGKILLed run leaves a fresh
  // heartbeat behind for up to 60 s, but the server frees its lock at once.
  auto state_of = [&](size_t i) {
    bool running = r.cell(i, 3) == "running";
    bool held = r.cell(i, 13) == "1";
    if (!running) return std::string(r.cell(i, 3));
    return std::string(held ? "running" : "stopped (process gone)");
  };
  auto live_of = [&](size_t i) { return r.cell(i, 5) == "1" && r.cell(i, 13) == "1"; };
  auto conflict_counts = registry.conflict_counts(*dst);
  auto conflicts_of = [&](size_t i) {
    auto it = conflict_counts.find(std::stoull(r.cell(i, 14)));
    return it == conflict_counts.end() ? 0ULL : it->second;
  };
  // The first open conflicts of a job, named like the run names them: "orders (id) = (5)".
  auto conflict_names = [&](size_t i) {
    std::vector<std::string> names;
    if (conflicts_of(i) == 0) return names;
    auto columns = root_key_columns(cfg, *dst, r.cell(i, 0), r.cell(i, 15));
    for (const auto& encoded : registry.conflict_keys(*dst, std::stoull(r.cell(i, 14)), k_conflicts_shown)) {
      names.push_back(name_root_key(r.cell(i, 15), columns, encoded));
    }
    return names;
  };
  if (format == Format::json) {
    Json out = Json::object();
    out.set("schema_version", Json(1));
    Json jobs = Json::array();
    for (size_t i = 0; i < r.rows(); ++i) {
      Json o = Json::object();
      o.set("job", Json(r.cell(i, 0)));
      o.set("command", Json(r.cell(i, 1)));
      o.set("source", Json(r.cell(i, 2)));
      o.set("status", Json(r.cell(i, 3)));
      o.set("state", Json(state_of(i)));
      o.set("heartbeat_at", Json(r.cell(i, 4)));
      o.set("live", Json(live_of(i)));
      o.set("job_lock_held", Json(r.cell(i, 13) == "1"));
      o.set("unfinished_roots", Json(std::stoull(r.cell(i, 6))));
      o.set("open_conflicts", Json(conflicts_of(i)));
      Json conflicts = Json::array();
      for (const auto& n : conflict_names(i)) conflicts.push(Json(n));
      o.set("conflicts", conflicts);
      Json tables = Json::array();
      for (const auto& t : split(r.cell(i, 7), ',')) {
        if (!t.empty()) tables.push(Json(t));
      }
      o.set("tables", tables);
      Json last = Json::object();
      last.set("run_id", Json(std::stoull(r.cell(i, 12))));
      last.set("status", Json(r.cell(i, 8)));
      last.set("exit_code", r.cell(i, 9).empty() ? Json() : Json(std::stoll(r.cell(i, 9))));
      last.set("reason", Json(r.cell(i, 10)));
      last.set("summary", r.cell(i, 11).empty() ? Json() : Json::raw(r.cell(i, 11)));
      o.set("last_run", last);
      jobs.push(o);
    }
    out.set("jobs", jobs);
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (r.rows() == 0) {
    std::cout << "the tracking registry " << cfg.destination.job_schema << " has no jobs yet\n";
    return 0;
  }
  std::vector<std::array<std::string, 8>> rows;
  rows.push_back({"JOB", "COMMAND", "SOURCE", "STATUS", "HEARTBEAT", "UNFINISHED", "CONFLICTS", "LAST RUN"});
  for (size_t i = 0; i < r.rows(); ++i) {
    std::string hb = r.cell(i, 4).empty() ? "-" : r.cell(i, 4) + (live_of(i) ? " (live)" : "");
    std::string last = "-";
    if (!r.cell(i, 8).empty()) {
      bool gone = r.cell(i, 8) == "running" && state_of(i) != "running";
      last = fmt::format("#{} {}", r.cell(i, 12), gone ? std::string("ended without an exit code") : r.cell(i, 8));
      if (!r.cell(i, 9).empty()) last += fmt::format(" exit {}", r.cell(i, 9));
      if (!r.cell(i, 10).empty()) last += ": " + r.cell(i, 10).substr(0, 80);
    }
    rows.push_back({r.cell(i, 0), r.cell(i, 1), r.cell(i, 2), state_of(i), hb, r.cell(i, 6),
                    std::to_string(conflicts_of(i)), last});
  }
  std::array<size_t, 8> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& row = rows[k];
    std::cout << fmt::format("{:<{}} {:<{}} {:<{}} {:<{}} {:<{}} {:>{}} {:>{}}  {}\n", row[0], width[0], row[1],
                             width[1], row[2], width[2], row[3], width[3], row[4], width[4], row[5], width[5], row[6],
                             width[6], row[7]);
    if (k == 0) continue;
    std::cout << fmt::format("  tables: {}\n", r.cell(k - 1, 7));
    unsigned long long open = conflicts_of(k - 1);
    if (open == 0) continue;
    auto names = conflict_names(k - 1);
    std::string more = open > names.size() ? fmt::format("; and {} more", open - names.size()) : "";
    std::cout << fmt::format("  conflicts ({} open, each waits for a person to delete one version): {}{}\n", open,
                             join(names, "; "), more);
  }
  return 0;
}

int jobs_clear(const config::Config& cfg, const std::string& name) {
  const config::Job& job = cfg.job(name);
  plan::Tree tree(job);
  auto dst = connect(cfg.destination, "destination (jobs clear)", sql::tag(name, 0));
  auto src = connect(cfg.source, "source (jobs clear)", sql::tag(name, 0));
  tracking::Registry registry(cfg.destination.job_schema);
  if (!registry.ready(*dst)) throw Error("there is no tracking registry in " + cfg.destination.job_schema + " to clear");
  auto row = registry.find_job(*dst, name);
  if (!row) throw Error(fmt::format("job \"{}\" is not in the tracking registry {}; nothing to clear", name, cfg.destination.job_schema));
  if (row->status != "running") {
    throw Error(fmt::format("job \"{}\" is not marked running (status {}); nothing to clear", name, row->status));
  }
  std::vector<std::string> held;
  auto jl = job_locks(cfg, job);
  locks::LockSession probe_dst(cfg.destination, "destination (jobs clear)");
  probe_dst.name_locks(jl);
  auto job_lock_holder = locks::holder_of(*dst, jl[0].name);
  // A fresh heartbeat with the job lock free is a process that died in the last 60 s (kill -9): clearable.
  if (row->live && job_lock_holder) {
    throw BusyError(fmt::format("job \"{}\" is live (heartbeat within the last 60 seconds, job lock held by "
                                "destination connection {}); refusing to clear a running job",
                                name, job_lock_holder));
  }
  if (job_lock_holder) held.push_back(fmt::format("its job lock (destination connection {})", job_lock_holder));
  auto tl = table_locks(cfg, tree);
  locks::LockSession probe_src(cfg.source, "source (jobs clear)");
  probe_src.name_locks(tl);
  for (const auto& l : tl) {
    if (auto h = locks::holder_of(*src, l.name)) held.push_back(fmt::format("{} (source connection {})", l.description, h));
  }
  if (!held.empty()) {
    throw BusyError(fmt::format("job \"{}\" still holds its locks: {}; its process is alive; refusing to clear it",
                                name, join(held, ", ")));
  }
  auto [copied, deleting] = registry.unfinished_counts(*dst, row->id);
  if (copied + deleting > 0) {
    throw Error(fmt::format("job \"{}\" has unfinished roots in its log ({} copied, {} deleting); clearing would lose "
                            "track of them. Rerun the job instead so its recovery finishes its work",
                            name, copied, deleting));
  }
  db::Transaction tx(*dst);
  uint64_t n = dst->execute(fmt::format("UPDATE {} SET status = 'cleared', version = version + 1, updated_at = NOW(6) "
                                        "WHERE id = {} AND status = 'running' AND version = {}",
                                        registry.table("jobs"), row->id, row->version));
  if (n != 1) throw Error(fmt::format("job \"{}\" changed while it was being cleared; look at it again", name));
  dst->execute(fmt::format("UPDATE {} SET status = 'cleared', ended_at = NOW(6), reason = 'cleared by jobs clear' "
                           "WHERE job_id = {} AND status = 'running'",
                           registry.table("runs"), row->id));
  tx.commit();
  std::cout << fmt::format("job \"{}\" cleared: it was marked running with nothing in its log and its process gone\n",
                           name);
  return 0;
}

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
      std::string lock_name = r.cell(0, i);
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
  // Breadth-first from the root over foreign keys that point at tables already in the job. A table reached again
  // through another parent gets a further relation (a diamond), unless that would close a cycle.
  std::vector<std::string> tree{root_table};
  std::map<std::string, std::vector<std::string>> parents{{root_table, {}}};
  std::function<bool(const std::string&, const std::string&)> reaches = [&](const std::string& from,
                                                                             const std::string& to) {
    if (from == to) return true;
    for (const auto& p : parents[from]) {
      if (reaches(p, to)) return true;
    }
    return false;
  };
  std::string out = fmt::format("# relations of the job under {}.{} (from the source's foreign keys)\n"
                                "[jobs.archive_{}]\nroot_table = {}\nwhere = \"<condition on {}>\"\n",
                                cfg.source.database, root_table, root_table, json_quote(root_table), root_table);
  std::vector<std::string> notes;
  auto relation = [&](const schema::ForeignKey& fk) {
    std::string cols = fk.columns.size() == 1 ? json_quote(fk.columns[0]) : [&] {
      std::string l = "[";
      for (size_t k = 0; k < fk.columns.size(); ++k) l += (k ? ", " : "") + json_quote(fk.columns[k]);
      return l + "]";
    }();
    out += fmt::format("\n[[jobs.archive_{}.relations]]\ntable = {}\n", root_table, json_quote(fk.table));
    if (fk.ref_table != root_table || !parents[fk.table].empty()) {
      out += fmt::format("parent = {}\n", json_quote(fk.ref_table));
    }
    out += fmt::format("foreign_key = {}\n", cols);
    parents[fk.table].push_back(fk.ref_table);
  };
  for (size_t i = 0; i < tree.size(); ++i) {
    for (const auto& fk : fks) {
      if (fk.ref_table != tree[i] || fk.ref_database != cfg.source.database) continue;
      if (fk.database != cfg.source.database) continue;  // another database: reported below as BLOCKS
      if (fk.table == tree[i]) {
        notes.push_back(fmt::format("# REFUSED: {}.{} references {} itself ({}): goarchive refuses self-references "
                                    "(a row's parent may be in another batch or archived later); drop that key",
                                    fk.table, join(fk.columns, ","), fk.ref_table, fk.name));
      } else if (!parents.count(fk.table)) {
        tree.push_back(fk.table);
        relation(fk);
      } else if (reaches(fk.ref_table, fk.table)) {
        notes.push_back(fmt::format("# REFUSED: {}.{} references {} ({}), which is below {} in the job: a cycle, "
                                    "which goarchive refuses; drop that key",
                                    fk.table, join(fk.columns, ","), fk.ref_table, fk.name, fk.table));
      } else {
        relation(fk);  // a further parent: the row moves only when every parent it has is archived too
      }
    }
  }
  for (const auto& fk : fks) {
    bool outside = fk.database != cfg.source.database || !parents.count(fk.table);
    if (parents.count(fk.ref_table) && outside && fk.ref_database == cfg.source.database) {
      notes.push_back(
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
  std::cout << out;
  for (const auto& n : notes) std::cout << n << "\n";
  return 0;
}

}  // namespace goarchive::app

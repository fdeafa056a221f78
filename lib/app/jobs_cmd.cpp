// jobs and jobs clear: the tracking registry as an operator reads it, and the one maintenance write it allows.
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

}  // namespace goarchive::app

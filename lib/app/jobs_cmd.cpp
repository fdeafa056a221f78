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
#include "tracking/partition_steps.h"
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
    for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
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

namespace {

// One job of the registry as `jobs` shows it.
struct JobLine {
  std::string name, command, source, status, state, heartbeat, tables, last_status, last_exit, last_reason, summary;
  bool live = false, lock_held = false;
  unsigned long long unfinished = 0, open_conflicts = 0, last_run = 0;
  std::vector<std::string> conflicts;  // the first few, named by key
  // Partition steps a run started and did not finish (partition_path.h), side_table as `db.table`.
  std::vector<tracking::PartitionStep> steps;
};

std::vector<JobLine> read_jobs(const config::Config& cfg, db::Connection& dst, const tracking::Registry& registry) {
  db::RowSet r = dst.query(fmt::format(
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
  auto counts = registry.conflict_counts(dst);
  std::vector<JobLine> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    JobLine j;
    j.name = r.text(i, 0);
    j.command = r.text(i, 1);
    j.source = r.text(i, 2);
    j.status = r.text(i, 3);
    j.heartbeat = r.text(i, 4);
    j.lock_held = r.text(i, 13) == "1";
    // A job marked running is live only while its process holds the job lock: a SIGKILLed run leaves a fresh
    // heartbeat behind for up to 60 s, but the server frees its lock at once.
    j.live = r.text(i, 5) == "1" && j.lock_held;
    j.state = j.status != "running" ? j.status : j.lock_held ? "running" : "stopped (process gone)";
    j.unfinished = std::stoull(r.text(i, 6));
    j.tables = r.text(i, 7);
    j.last_status = r.text(i, 8);
    j.last_exit = r.text(i, 9);
    j.last_reason = r.text(i, 10);
    j.summary = r.text(i, 11);
    j.last_run = std::stoull(r.text(i, 12));
    auto it = counts.find(std::stoull(r.text(i, 14)));
    j.open_conflicts = it == counts.end() ? 0ULL : it->second;
    if (j.open_conflicts > 0) {
      // The first open conflicts, named like the run names them: "orders (id) = (5)".
      auto columns = root_key_columns(cfg, dst, j.name, r.text(i, 15));
      for (const auto& encoded : registry.conflict_keys(dst, std::stoull(r.text(i, 14)), k_conflicts_shown)) {
        j.conflicts.push_back(name_root_key(r.text(i, 15), columns, encoded));
      }
    }
    j.steps = tracking::PartitionSteps(registry, std::stoull(r.text(i, 14)), "").unfinished(dst);
    for (auto& st : j.steps) st.side_table = j.source.substr(j.source.rfind('/') + 1) + "." + st.side_table;
    out.push_back(std::move(j));
  }
  return out;
}

void print_json(const std::vector<JobLine>& lines) {
  Json out = Json::object();
  out.set("schema_version", Json(1));
  Json jobs = Json::array();
  for (const auto& j : lines) {
    Json o = Json::object();
    o.set("job", Json(j.name));
    o.set("command", Json(j.command));
    o.set("source", Json(j.source));
    o.set("status", Json(j.status));
    o.set("state", Json(j.state));
    o.set("heartbeat_at", Json(j.heartbeat));
    o.set("live", Json(j.live));
    o.set("job_lock_held", Json(j.lock_held));
    o.set("unfinished_roots", Json(j.unfinished));
    o.set("open_conflicts", Json(j.open_conflicts));
    Json conflicts = Json::array();
    for (const auto& n : j.conflicts) conflicts.push(Json(n));
    o.set("conflicts", conflicts);
    Json steps = Json::array();
    for (const auto& st : j.steps) {
      Json p = Json::object();
      p.set("partition", Json(st.partition));
      p.set("command", Json(st.command));
      p.set("state", Json(st.state));
      p.set("side_table", Json(st.side_table));
      p.set("rows_copied", Json(st.rows_copied));
      steps.push(p);
    }
    o.set("partition_steps", steps);
    Json tables = Json::array();
    for (const auto& t : split(j.tables, ',')) {
      if (!t.empty()) tables.push(Json(t));
    }
    o.set("tables", tables);
    Json last = Json::object();
    last.set("run_id", Json(j.last_run));
    last.set("status", Json(j.last_status));
    last.set("exit_code", j.last_exit.empty() ? Json() : Json(std::stoll(j.last_exit)));
    last.set("reason", Json(j.last_reason));
    last.set("summary", j.summary.empty() ? Json() : Json::raw(j.summary));
    o.set("last_run", last);
    jobs.push(o);
  }
  out.set("jobs", jobs);
  std::cout << out.dump() << "\n";
}

void print_text(const std::vector<JobLine>& lines) {
  std::vector<std::array<std::string, 8>> rows;
  rows.push_back({"JOB", "COMMAND", "SOURCE", "STATUS", "HEARTBEAT", "UNFINISHED", "CONFLICTS", "LAST RUN"});
  for (const auto& j : lines) {
    std::string hb = j.heartbeat.empty() ? "-" : j.heartbeat + (j.live ? " (live)" : "");
    std::string last = "-";
    if (!j.last_status.empty()) {
      bool gone = j.last_status == "running" && j.state != "running";
      last = fmt::format("#{} {}", j.last_run, gone ? std::string("ended without an exit code") : j.last_status);
      if (!j.last_exit.empty()) last += fmt::format(" exit {}", j.last_exit);
      if (!j.last_reason.empty()) last += ": " + j.last_reason.substr(0, 80);
    }
    rows.push_back({j.name, j.command, j.source, j.state, hb, std::to_string(j.unfinished),
                    std::to_string(j.open_conflicts), last});
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
    const JobLine& j = lines[k - 1];
    std::cout << fmt::format("  tables: {}\n", j.tables);
    for (const auto& st : j.steps) {
      std::string where = st.state == "detaching"
                              ? fmt::format("its rows are in the partition, or in the side table {} if the detach ran",
                                            st.side_table)
                              : fmt::format("its rows are in the side table {}, {} copied", st.side_table,
                                            st.rows_copied);
      std::cout << fmt::format("  partition {}: {} {} ({}); `goarchive {} -j {}` finishes it\n", st.partition,
                               st.command, st.state, where, st.command, j.name);
    }
    if (j.open_conflicts == 0) continue;
    std::string more =
        j.open_conflicts > j.conflicts.size() ? fmt::format("; and {} more", j.open_conflicts - j.conflicts.size()) : "";
    std::cout << fmt::format("  conflicts ({} open, each waits for a person to delete one version): {}{}\n",
                             j.open_conflicts, join(j.conflicts, "; "), more);
  }
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
  std::vector<JobLine> lines = read_jobs(cfg, *dst, registry);
  if (format == Format::json) {
    print_json(lines);
  } else if (lines.empty()) {
    std::cout << "the tracking registry " << cfg.destination.job_schema << " has no jobs yet\n";
  } else {
    print_text(lines);
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

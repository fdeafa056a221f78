// Registry: the job rows and their runs: find or create a job (I4/I5), start a run in the single active slot
// (I1), heartbeats and the end of a run. Guarded writes only.
#include "tracking/registry.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "plan/sql.h"
#include "tracking/registry_text.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::tracking {

using namespace detail;

std::optional<JobRow> Registry::find_job(db::Connection& conn, const std::string& name) const {
  db::RowSet r = conn.query(fmt::format("SELECT id, name, command, status, run_id, version, IFNULL({}, 0) FROM {} "
                                        "WHERE name = {}",
                                        k_live_expr, table("jobs"), sql::quote(name)));
  if (r.rows() == 0) return std::nullopt;
  JobRow j;
  j.id = std::stoull(r.text(0, 0));
  j.name = r.text(0, 1);
  j.command = r.text(0, 2);
  j.status = r.text(0, 3);
  if (!r.is_null(0, 4)) j.run_id = std::stoull(r.text(0, 4));
  j.version = std::stoull(r.text(0, 5));
  j.live = r.text(0, 6) == "1";
  return j;
}

JobRow Registry::ensure_job(db::Connection& conn, const std::string& name, const std::string& command,
                            const guard::SourceIdentity& s, const std::string& destination_database,
                            const std::string& root_table,
                            const std::vector<std::pair<std::string, std::string>>& tables,
                            const std::vector<std::string>& table_keys) const {
  auto opt = [](const std::optional<unsigned long long>& v) { return v ? std::to_string(*v) : std::string("NULL"); };
  try {
    conn.execute(fmt::format("INSERT INTO {} (name, command) VALUES ({}, {})", table("jobs"), sql::quote(name),
                             sql::quote(command)));
  } catch (const db::DbError& e) {
    if (!e.duplicate_key()) throw;  // the job's one row already exists (I4/I5): reuse it
  }
  auto job = find_job(conn, name);
  if (!job) throw Error("tracking registry: job row for \"" + name + "\" vanished after it was created");
  // The recorded source says where the job's unfinished work came from: it stays until that work is done, so that
  // a job re-pointed at another source is refused (check_recorded_source) on this run and on every rerun.
  auto unfinished = conn.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE job_id = {} AND unfinished = 1",
                                            table("batches"), job->id));
  if (unfinished.value_or("0") != "0") return *job;
  // Recording the job's source and tables is guarded by its version (I6); we hold the job lock, so a miss here
  // means a run that does not take the locks changed the row.
  db::Transaction tx(conn);
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET source_host = {}, source_port = {}, source_database = {}, source_flavor = {}, "
      "source_server_id = {}, source_server_uuid = {}, source_gtid_domain = {}, destination_database = {}, "
      "root_table = {}, version = version + 1, updated_at = NOW(6) WHERE id = {} AND version = {}",
      table("jobs"), sql::quote(s.host), s.port, sql::quote(s.database), sql::quote(s.flavor), opt(s.server_id),
      s.server_uuid.empty() ? "NULL" : sql::quote(s.server_uuid), opt(s.gtid_domain), sql::quote(destination_database),
      sql::quote(root_table), job->id, job->version));
  if (n != 1) preempted("recording the job's source", n, 1);
  conn.execute(fmt::format("REPLACE INTO {} (job_id, gtid_state) VALUES ({}, {})", table("job_gtid_states"), job->id,
                           sql::quote(s.gtid_state)));
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {}", table("job_tables"), job->id));
  std::string values;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) values += ',';
    values += fmt::format("({}, {}, {}, {})", job->id, sql::quote(table_keys[i]), sql::quote(tables[i].first),
                          sql::quote(tables[i].second));
  }
  if (!values.empty()) {
    conn.execute(fmt::format("INSERT INTO {} (job_id, table_key, database_name, table_name) VALUES {}",
                             table("job_tables"), values));
  }
  tx.commit();
  return *find_job(conn, name);
}

namespace {

// The job's runs marked running, locked (id, host, pid, live, seconds since the heartbeat, heartbeat_at).
db::RowSet running_runs(db::Connection& conn, const Registry& reg, unsigned long long job_id) {
  return conn.query(fmt::format(
      "SELECT id, host, pid, {}, TIMESTAMPDIFF(SECOND, heartbeat_at, NOW(6)), heartbeat_at FROM {} WHERE job_id = {} "
      "AND status = 'running' ORDER BY id FOR UPDATE",
      k_live_expr, reg.table("runs"), job_id));
}

// A live heartbeat from this host whose process is gone (killed within the last minute) proves nothing is
// running: this host can see that.
bool gone_here(const db::RowSet& running, size_t i, const std::string& host) {
  if (running.text(i, 1) != host) return false;
  auto pid = static_cast<pid_t>(std::stol(running.text(i, 2)));
  return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Busy (exit 4) when one of RUNNING is live: another process's run.
void refuse_live_run(const db::RowSet& running, const std::string& host, const JobRow& job,
                     const std::string& schema) {
  for (size_t i = 0; i < running.rows(); ++i) {
    if (running.text(i, 3) == "1" && !gone_here(running, i, host)) {
      throw BusyError(fmt::format("job \"{}\" is already running: run {} on host {} (pid {}) is marked running in the "
                                  "tracking registry {} with a heartbeat {} s ago (live within 60 s); this run did "
                                  "nothing. Try again when that run has ended",
                                  job.name, running.text(i, 0), running.text(i, 1), running.text(i, 2), schema,
                                  running.text(i, 4)));
    }
  }
}

// Guarded take-over: only the runs we saw, only while still running and still stale (or, for a process gone
// from this host, still at the heartbeat we read).
void close_stale_runs(db::Connection& conn, const Registry& reg, const db::RowSet& running, const JobRow& job) {
  for (size_t i = 0; i < running.rows(); ++i) {
    bool stale = running.text(i, 3) != "1";
    uint64_t closed = conn.execute(fmt::format(
        "UPDATE {} SET status = 'crashed', ended_at = NOW(6), reason = {} WHERE id = {} AND job_id = {} AND "
        "status = 'running' AND {}",
        reg.table("runs"),
        sql::quote(stale ? "no heartbeat within 60 s; closed by the next run"
                         : "process gone from its host; closed by the next run"),
        running.text(i, 0), job.id,
        stale ? fmt::format("NOT {}", k_live_expr) : "heartbeat_at = " + sql::quote(running.text(i, 5))));
    if (closed != 1) preempted("closing a stale run", closed, 1);
    spdlog::warn("run {} of job {} on host {} (pid {}) ended without closing its record (crash or kill) and has had "
                 "no heartbeat for {} s: marked crashed",
                 running.text(i, 0), job.name, running.text(i, 1), running.text(i, 2), running.text(i, 4));
  }
}

}  // namespace

unsigned long long Registry::start_run(db::Connection& conn, const JobRow& job, const std::string& command,
                                       unsigned long long source_conn, unsigned long long dest_conn) const {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  db::Transaction tx(conn);
  // Guarded write first (seed 000 §3.3): the job row moves to running only from the version we read.
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET status = 'running', command = {}, heartbeat_at = NOW(6), version = version + 1, "
      "updated_at = NOW(6) WHERE id = {} AND version = {}",
      table("jobs"), sql::quote(command), job.id, job.version));
  if (n != 1) preempted("starting the run", n, 1);
  // A run still marked running is another process's unless its heartbeat is stale: the job lock cannot prove
  // it gone (a proxy or a multi-primary cluster gives each host its own locks), the database clock can (I1).
  db::RowSet running = running_runs(conn, *this, job.id);
  refuse_live_run(running, host, job, m_schema);
  close_stale_runs(conn, *this, running, job);
  try {
    conn.execute(fmt::format("INSERT INTO {} (job_id, command, host, pid, source_connection, destination_connection) "
                             "VALUES ({}, {}, {}, {}, {}, {})",
                             table("runs"), job.id, sql::quote(command), sql::quote(host), ::getpid(), source_conn,
                             dest_conn));
  } catch (const db::DbError& e) {
    if (e.duplicate_key()) {
      throw BusyError(fmt::format("job \"{}\" already has a running run in the tracking registry {} (its single "
                                  "active slot is taken); this run did nothing",
                                  job.name, m_schema));
    }
    throw;
  }
  unsigned long long run_id = std::stoull(conn.scalar("SELECT LAST_INSERT_ID()").value_or("0"));
  conn.execute(fmt::format("UPDATE {} SET run_id = {} WHERE id = {}", table("jobs"), run_id, job.id));
  tx.commit();
  return run_id;
}

void Registry::heartbeat(db::Connection& conn, unsigned long long job_id, unsigned long long run_id) const {
  conn.execute(fmt::format("UPDATE {} SET heartbeat_at = NOW(6) WHERE id = {} AND status = 'running'", table("runs"),
                           run_id));
  conn.execute(fmt::format("UPDATE {} SET heartbeat_at = NOW(6) WHERE id = {} AND run_id = {} AND status = 'running'",
                           table("jobs"), job_id, run_id));
}

void Registry::finish_run(db::Connection& conn, unsigned long long job_id, unsigned long long run_id,
                          const std::string& status, int exit_code, const std::string& reason,
                          const std::string& summary_json) const {
  db::Transaction tx(conn);
  conn.execute(fmt::format("UPDATE {} SET status = {}, ended_at = NOW(6), exit_code = {}, reason = {}, summary = {} "
                           "WHERE id = {} AND status = 'running'",
                           table("runs"), sql::quote(status), exit_code, sql::quote(reason.substr(0, 1000)),
                           sql::quote(summary_json), run_id));
  std::string job_status = status == "finished" ? "finished" : status == "failed" ? "failed" : "stopped";
  conn.execute(fmt::format("UPDATE {} SET status = {}, version = version + 1, updated_at = NOW(6) "
                           "WHERE id = {} AND run_id = {} AND status = 'running'",
                           table("jobs"), sql::quote(job_status), job_id, run_id));
  tx.commit();
}

}  // namespace goarchive::tracking

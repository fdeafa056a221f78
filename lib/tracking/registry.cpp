#include "tracking/registry.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "plan/sql.h"
#include "tracking/migrations.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::tracking {

RootKey encode_key(const std::vector<std::string>& values) {
  RootKey k;
  for (const auto& v : values) {
    auto n = static_cast<uint32_t>(v.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                   static_cast<char>(n)};
    k.encoded.append(len, 4);
    k.encoded.append(v);
  }
  k.hash = sha256(k.encoded).substr(0, 16);
  return k;
}

std::vector<std::string> decode_key(const std::string& encoded) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos + 4 <= encoded.size()) {
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(encoded[pos + i])); };
    uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    pos += 4;
    if (pos + n > encoded.size()) throw Error("corrupt root key in the tracking log");
    out.push_back(encoded.substr(pos, n));
    pos += n;
  }
  return out;
}

namespace {

// Liveness is judged on the registry server's clock, never the client's (seed 000).
constexpr const char* k_live_expr = "(heartbeat_at > NOW(6) - INTERVAL 60 SECOND)";

// Comma-separated literals of the values: quoted strings, or hex literals for binary hashes.
std::string literal_list(const std::vector<std::string>& values, bool binary) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += binary ? sql::hex_literal(values[i]) : sql::quote(values[i]);
  }
  return out;
}
std::string in_list(const std::vector<std::string>& values) { return literal_list(values, false); }
std::string hex_list(const std::vector<std::string>& values) { return literal_list(values, true); }

[[noreturn]] void preempted(const std::string& what, uint64_t got, size_t expected) {
  throw Error(fmt::format("tracking registry: {} changed {} row(s) where {} were expected; another session changed "
                          "this job's state (a stale write was refused). Nothing was committed; rerun the job",
                          what, got, expected));
}

}  // namespace

std::string Registry::table(const char* name) const { return sql::qualified(m_schema, name); }

bool Registry::ready(db::Connection& conn) const {
  try {
    auto v = conn.scalar("SELECT MAX(version) FROM " + table("schema_version"));
    return v && std::stoi(*v) >= migrations().back().version;
  } catch (const db::DbError& e) {
    if (e.code() == 1146 || e.code() == 1049) return false;
    throw;
  }
}

void Registry::create(db::Connection& conn) const {
  conn.execute("CREATE DATABASE IF NOT EXISTS " + sql::ident(m_schema) +
               " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
  int current = 0;
  try {
    if (auto v = conn.scalar("SELECT MAX(version) FROM " + table("schema_version"))) current = std::stoi(*v);
  } catch (const db::DbError& e) {
    if (e.code() != 1146) throw;
  }
  for (const Migration& m : migrations()) {
    if (m.version <= current) continue;
    std::string text = m.sql;
    std::string quoted = sql::ident(m_schema);
    for (size_t pos = 0; (pos = text.find("{schema}", pos)) != std::string::npos; pos += quoted.size()) {
      text.replace(pos, 8, quoted);
    }
    // Statements are separated by a ';' at the end of a line.
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(";\n", start);
      std::string stmt = trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      // Drop leading comment lines.
      while (stmt.rfind("--", 0) == 0) {
        auto nl = stmt.find('\n');
        stmt = nl == std::string::npos ? "" : trim(stmt.substr(nl + 1));
      }
      try {
        if (!stmt.empty()) conn.execute(stmt);
      } catch (const db::DbError& e) {
        // A run that died inside a migration left part of it applied: an existing column, index or table is
        // an answer (DDL commits on its own, so the migration is re-applied statement by statement).
        if (e.code() != 1060 && e.code() != 1061 && e.code() != 1050) throw;
      }
      if (end == std::string::npos) break;
      start = end + 2;
    }
    conn.execute(fmt::format("INSERT INTO {} (version, file) VALUES ({}, {})", table("schema_version"), m.version,
                             sql::quote(m.file)));
    spdlog::info("tracking schema {}: applied {}", m_schema, m.file);
  }
}

std::optional<JobRow> Registry::find_job(db::Connection& conn, const std::string& name) const {
  db::RowSet r = conn.query(fmt::format("SELECT id, name, command, status, run_id, version, IFNULL({}, 0) FROM {} "
                                        "WHERE name = {}",
                                        k_live_expr, table("jobs"), sql::quote(name)));
  if (r.rows() == 0) return std::nullopt;
  JobRow j;
  j.id = std::stoull(r.cell(0, 0));
  j.name = r.cell(0, 1);
  j.command = r.cell(0, 2);
  j.status = r.cell(0, 3);
  if (!r.is_null(0, 4)) j.run_id = std::stoull(r.cell(0, 4));
  j.version = std::stoull(r.cell(0, 5));
  j.live = r.cell(0, 6) == "1";
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
  db::RowSet running = conn.query(fmt::format(
      "SELECT id, host, pid, {}, TIMESTAMPDIFF(SECOND, heartbeat_at, NOW(6)), heartbeat_at FROM {} WHERE job_id = {} "
      "AND status = 'running' ORDER BY id FOR UPDATE",
      k_live_expr, table("runs"), job.id));
  // A live heartbeat from this host whose process is gone (killed within the last minute) proves nothing is
  // running: this host can see that.
  auto gone_here = [&](size_t i) {
    if (running.cell(i, 1) != host) return false;
    auto pid = static_cast<pid_t>(std::stol(running.cell(i, 2)));
    return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
  };
  for (size_t i = 0; i < running.rows(); ++i) {
    if (running.cell(i, 3) == "1" && !gone_here(i)) {
      throw BusyError(fmt::format("job \"{}\" is already running: run {} on host {} (pid {}) is marked running in the "
                                  "tracking registry {} with a heartbeat {} s ago (live within 60 s); this run did "
                                  "nothing. Try again when that run has ended",
                                  job.name, running.cell(i, 0), running.cell(i, 1), running.cell(i, 2), m_schema,
                                  running.cell(i, 4)));
    }
  }
  for (size_t i = 0; i < running.rows(); ++i) {
    // Guarded take-over: only the run we saw, only while it is still running and still stale (or, for a process
    // gone from this host, still at the heartbeat we read).
    bool stale = running.cell(i, 3) != "1";
    uint64_t closed = conn.execute(fmt::format(
        "UPDATE {} SET status = 'crashed', ended_at = NOW(6), reason = {} WHERE id = {} AND job_id = {} AND "
        "status = 'running' AND {}",
        table("runs"),
        sql::quote(stale ? "no heartbeat within 60 s; closed by the next run"
                         : "process gone from its host; closed by the next run"),
        running.cell(i, 0), job.id,
        stale ? fmt::format("NOT {}", k_live_expr) : "heartbeat_at = " + sql::quote(running.cell(i, 5))));
    if (closed != 1) preempted("closing a stale run", closed, 1);
    spdlog::warn("run {} of job {} on host {} (pid {}) ended without closing its record (crash or kill) and has had "
                 "no heartbeat for {} s: marked crashed",
                 running.cell(i, 0), job.name, running.cell(i, 1), running.cell(i, 2), running.cell(i, 4));
  }
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

std::string pack_keys(const std::vector<RootKey>& keys) {
  std::string out;
  for (const auto& k : keys) {
    auto n = static_cast<uint32_t>(k.encoded.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                   static_cast<char>(n)};
    out.append(len, 4);
    out += k.encoded;
  }
  return out;
}

std::vector<std::string> unpack_keys(const std::string& blob) { return decode_key(blob); }

unsigned long long Registry::claim_batch(db::Connection& conn, unsigned long long job_id, unsigned long long run_id,
                                         unsigned batch_no, const std::string& scope, const std::vector<RootKey>& keys,
                                         const std::string& state) const {
  // The guarded write first: bump the scope's version, which holds its row until this transaction ends, so
  // that claimers of one scope serialize and each sees the batches committed before it. Affected rows 0: the
  // scope has no row yet; create it (a duplicate key is an answer: another run just did) and bump again.
  std::string bump = fmt::format("UPDATE {} SET version = version + 1, updated_at = NOW(6) WHERE scope = {}",
                                 table("claim_scopes"), sql::quote(scope));
  if (conn.execute(bump) != 1) {
    try {
      conn.execute(fmt::format("INSERT INTO {} (scope) VALUES ({})", table("claim_scopes"), sql::quote(scope)));
    } catch (const db::DbError& e) {
      if (!e.duplicate_key()) throw;
    }
    uint64_t n = conn.execute(bump);
    if (n != 1) preempted("claiming a batch (the claim scope's row)", n, 1);
  }
  // Unfinished batches of other jobs on the same root table: none, unless the locks were bypassed.
  db::RowSet others = conn.query(fmt::format(
      "SELECT k.root_keys, j.name FROM {} b JOIN {} j ON j.id = b.job_id JOIN {} k ON k.batch_id = b.id "
      "WHERE b.scope = {} AND b.unfinished = 1 AND b.job_id <> {}",
      table("batches"), table("jobs"), table("batch_keys"), sql::quote(scope), job_id));
  if (others.rows() > 0) {
    std::set<std::string> mine;
    for (const auto& k : keys) mine.insert(k.encoded);
    for (size_t i = 0; i < others.rows(); ++i) {
      for (const auto& k : unpack_keys(others.cell(i, 0))) {
        if (mine.count(k)) {
          throw Error(fmt::format("a root of this batch is already claimed as unfinished work by job \"{}\" in the "
                                  "tracking registry {} (no double claiming); rerun that job so its recovery "
                                  "finishes its work",
                                  others.cell(i, 1), m_schema));
        }
      }
    }
  }
  conn.execute(fmt::format("INSERT INTO {} (job_id, run_id, batch_no, scope, state, roots) VALUES ({}, {}, {}, {}, "
                           "{}, {})",
                           table("batches"), job_id, run_id, batch_no, sql::quote(scope), sql::quote(state),
                           keys.size()));
  unsigned long long batch_id = conn.last_insert_id();
  conn.execute(fmt::format("INSERT INTO {} (batch_id, root_keys) VALUES ({}, {})", table("batch_keys"), batch_id,
                           sql::hex_literal(pack_keys(keys))));
  return batch_id;
}

unsigned Registry::adopt(db::Connection& conn, unsigned long long batch_id, unsigned long long run_id,
                         unsigned batch_no, unsigned version) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET run_id = {}, batch_no = {}, version = version + 1, updated_at = NOW(6) "
      "WHERE id = {} AND version = {} AND state IN ('copied', 'deleting')",
      table("batches"), run_id, batch_no, batch_id, version));
  if (n != 1) preempted("adopting an unfinished batch", n, 1);
  return version + 1;
}

unsigned Registry::transition(db::Connection& conn, unsigned long long batch_id, const std::vector<std::string>& from,
                              const std::string& to, unsigned version, unsigned changed) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET state = {}, changed = {}, version = version + 1, updated_at = NOW(6) WHERE id = {} AND "
      "version = {} AND state IN ({})",
      table("batches"), sql::quote(to), changed, batch_id, version, in_list(from)));
  if (n != 1) preempted(fmt::format("marking batch {} {}", batch_id, to), n, 1);
  return version + 1;
}

void Registry::mark_roots(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes,
                          const std::string& state, const std::vector<std::string>* keys) const {
  if (hashes.empty()) return;
  std::string values, key_values;
  for (size_t i = 0; i < hashes.size(); ++i) {
    values += fmt::format("{}({},{},{})", i ? "," : "", job_id, sql::hex_literal(hashes[i]), sql::quote(state));
    if (keys) key_values += fmt::format("{}({},{},{})", i ? "," : "", job_id, sql::hex_literal(hashes[i]),
                                        sql::hex_literal((*keys)[i]));
  }
  // A duplicate key is an answer: the root already has a mark, which now says `state`.
  conn.execute(fmt::format("INSERT INTO {} (job_id, root_key_hash, state) VALUES {} ON DUPLICATE KEY UPDATE "
                           "state = VALUES(state), updated_at = NOW(6)",
                           table("root_marks"), values));
  if (keys) {
    conn.execute(fmt::format("INSERT INTO {} (job_id, root_key_hash, root_key) VALUES {} ON DUPLICATE KEY UPDATE "
                             "root_key = VALUES(root_key)",
                             table("root_mark_keys"), key_values));
  }
}

std::vector<std::string> Registry::marked(db::Connection& conn, unsigned long long job_id,
                                          const std::vector<std::string>& hashes, const std::string& state) const {
  std::vector<std::string> out;
  if (hashes.empty()) return out;
  db::RowSet r = conn.query(fmt::format("SELECT root_key_hash FROM {} WHERE job_id = {} AND root_key_hash IN ({}) AND "
                                        "state = {}",
                                        table("root_marks"), job_id, hex_list(hashes), sql::quote(state)));
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.cell(i, 0));
  return out;
}

unsigned long long Registry::count_marked(db::Connection& conn, unsigned long long job_id,
                                          const std::string& state) const {
  return std::stoull(conn.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE job_id = {} AND state = {}",
                                             table("root_marks"), job_id, sql::quote(state)))
                         .value_or("0"));
}

void Registry::unmark(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes) const {
  if (hashes.empty()) return;
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {} AND root_key_hash IN ({})", table("root_marks"), job_id,
                           hex_list(hashes)));
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {} AND root_key_hash IN ({})", table("root_mark_keys"),
                           job_id, hex_list(hashes)));
}

std::string Registry::scope_filter(const char* alias) const {
  if (m_scope.empty()) return "";
  return fmt::format(" AND {}scope = {}", alias, sql::quote(m_scope));
}

std::vector<BatchRow> Registry::unfinished_batches(db::Connection& conn, unsigned long long job_id,
                                                   unsigned long long after_id, size_t limit) const {
  db::RowSet r = conn.query(fmt::format(
      "SELECT b.id, b.state, b.version, k.root_keys FROM {} b JOIN {} k ON k.batch_id = b.id WHERE b.job_id = {} "
      "AND b.unfinished = 1{} AND b.id > {} ORDER BY b.id LIMIT {}",
      table("batches"), table("batch_keys"), job_id, scope_filter("b."), after_id, limit));
  std::vector<BatchRow> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    out.push_back(BatchRow{std::stoull(r.cell(i, 0)), r.cell(i, 1), static_cast<unsigned>(std::stoul(r.cell(i, 2))),
                           unpack_keys(r.cell(i, 3))});
  }
  return out;
}

std::pair<unsigned long long, unsigned long long> Registry::unfinished_counts(db::Connection& conn,
                                                                              unsigned long long job_id) const {
  db::RowSet r = conn.query(fmt::format("SELECT IFNULL(SUM(IF(state = 'copied', roots, 0)), 0), "
                                        "IFNULL(SUM(IF(state = 'deleting', roots, 0)), 0) FROM {} "
                                        "WHERE job_id = {} AND unfinished = 1{}",
                                        table("batches"), job_id, scope_filter("")));
  return {std::stoull(r.cell(0, 0)), std::stoull(r.cell(0, 1))};
}

unsigned long long Registry::prune(db::Connection& conn, unsigned long long job_id, double retention_days) const {
  unsigned long long total = 0;
  for (int round = 0; round < 1000; ++round) {
    db::RowSet ids = conn.query(fmt::format(
        "SELECT id FROM {} WHERE job_id = {} AND state = 'done' AND updated_at < NOW(6) - INTERVAL {} SECOND "
        "LIMIT 1000",
        table("batches"), job_id, static_cast<long long>(retention_days * 86400)));
    if (ids.rows() == 0) break;
    std::string list;
    for (size_t i = 0; i < ids.rows(); ++i) list += (i ? "," : "") + ids.cell(i, 0);
    db::Transaction tx(conn);
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id IN ({})", table("batch_keys"), list));
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id IN ({})", table("batch_stayed"), list));
    total += conn.execute(fmt::format("DELETE FROM {} WHERE id IN ({}) AND state = 'done'", table("batches"), list));
    tx.commit();
    if (ids.rows() < 1000) break;
  }
  return total;
}

namespace {

std::string source_label(const std::string& host, unsigned port, const std::string& database) {
  // A socket path is recorded as the host; its port means nothing then.
  if (!host.empty() && host[0] == '/') return host + "/" + database;
  return fmt::format("{}:{}/{}", host, port, database);
}

}  // namespace

RecordedSource Registry::recorded_source(db::Connection& conn, unsigned long long job_id,
                                         const std::string& scope) const {
  RecordedSource rs;
  db::RowSet r = conn.query(fmt::format(
      "SELECT source_flavor, source_host, source_port, source_database, source_server_id, "
      "IFNULL(source_server_uuid, ''), root_table, "
      "(SELECT IFNULL(SUM(b.roots), 0) FROM {0} b WHERE b.job_id = j.id AND b.unfinished = 1), "
      "(SELECT IFNULL(SUM(b.roots), 0) FROM {0} b WHERE b.job_id = j.id AND b.unfinished = 1 AND b.scope <> {1}) "
      "FROM {2} j WHERE j.id = {3}",
      table("batches"), sql::quote(scope), table("jobs"), job_id));
  if (r.rows() == 0) return rs;
  rs.source.flavor = r.cell(0, 0);
  rs.source.host = r.cell(0, 1);
  rs.source.port = static_cast<unsigned>(std::stoul(r.cell(0, 2)));
  rs.source.database = r.cell(0, 3);
  if (!r.is_null(0, 4)) rs.source.server_id = std::stoull(r.cell(0, 4));
  rs.source.server_uuid = r.cell(0, 5);
  rs.root_table = r.cell(0, 6);
  rs.unfinished_roots = std::stoull(r.cell(0, 7));
  rs.other_scope_roots = std::stoull(r.cell(0, 8));
  return rs;
}

bool same_recorded_source(const RecordedSource& recorded, const guard::SourceIdentity& now) {
  const auto& was = recorded.source;
  if (was.flavor != now.flavor || was.database != now.database) return false;
  if (!was.server_uuid.empty() || !now.server_uuid.empty()) {
    if (ascii_lower(was.server_uuid) != ascii_lower(now.server_uuid)) return false;
  }
  if (was.server_id.has_value() != now.server_id.has_value()) return false;
  if (was.server_id && *was.server_id != *now.server_id) return false;
  // The scope of the work is the configured address: the same server under another address is another scope.
  return ascii_lower(was.host) == ascii_lower(now.host) && was.port == now.port;
}

void check_recorded_source(const Registry& registry, db::Connection& conn, const JobRow& job,
                           const guard::SourceIdentity& now, const std::string& scope) {
  RecordedSource rs = registry.recorded_source(conn, job.id, scope);
  if (rs.unfinished_roots == 0) return;
  if (same_recorded_source(rs, now) && rs.other_scope_roots == 0) return;
  std::string was = source_label(rs.source.host, rs.source.port, rs.source.database);
  std::string is = source_label(now.host, now.port, now.database);
  throw Error(fmt::format(
      "job \"{}\" has unfinished work ({} root(s) copied or deleting) recorded for the source {} (root table {}{}), "
      "but it now points at {}{}: its recovery would apply that source's root keys here; this run did nothing. "
      "Point the job back at {} and rerun it to finish its work",
      job.name, rs.unfinished_roots, was, rs.root_table,
      rs.source.server_id ? fmt::format(", server_id {}", *rs.source.server_id) : std::string(), is,
      now.server_id ? fmt::format(" (server_id {})", *now.server_id) : std::string(), was));
}

std::vector<GuardHit> Registry::guard_candidates(db::Connection& conn, unsigned long long self_job_id,
                                                 const std::vector<std::string>& table_keys) const {
  std::vector<GuardHit> out;
  if (table_keys.empty()) return out;
  db::RowSet r = conn.query(fmt::format(
      "SELECT j.id, j.name, j.status, IFNULL({}, 0), j.source_flavor, j.source_host, j.source_port, "
      "j.source_database, j.source_server_id, IFNULL(j.source_server_uuid, ''), j.source_gtid_domain, "
      "(SELECT IFNULL(SUM(b.roots), 0) FROM {} b WHERE b.job_id = j.id AND b.unfinished = 1 AND b.state = 'copied'), "
      "(SELECT IFNULL(SUM(b.roots), 0) FROM {} b WHERE b.job_id = j.id AND b.unfinished = 1 AND b.state = 'deleting'), "
      "(SELECT GROUP_CONCAT(CONCAT(t.database_name, '.', t.table_name) ORDER BY t.table_name SEPARATOR ', ') "
      "   FROM {} t WHERE t.job_id = j.id AND t.table_key IN ({})) "
      "FROM {} j WHERE j.id <> {} AND j.id IN (SELECT job_id FROM {} WHERE table_key IN ({})) ORDER BY j.name",
      "(j." + std::string(k_live_expr).substr(1), table("batches"), table("batches"), table("job_tables"),
      in_list(table_keys),
      table("jobs"), self_job_id, table("job_tables"), in_list(table_keys)));
  for (size_t i = 0; i < r.rows(); ++i) {
    GuardHit h;
    h.name = r.cell(i, 1);
    h.status = r.cell(i, 2);
    h.live = r.cell(i, 3) == "1" && h.status == "running";
    h.source.flavor = r.cell(i, 4);
    h.source.host = r.cell(i, 5);
    h.source.port = static_cast<unsigned>(std::stoul(r.cell(i, 6)));
    h.source.database = r.cell(i, 7);
    if (!r.is_null(i, 8)) h.source.server_id = std::stoull(r.cell(i, 8));
    h.source.server_uuid = r.cell(i, 9);
    if (!r.is_null(i, 10)) h.source.gtid_domain = std::stoull(r.cell(i, 10));
    // A domain (MariaDB) or UUID (MySQL) is recorded only for a source that could tell its GTID history.
    h.source.gtid_known = !r.is_null(i, 10) || !h.source.server_uuid.empty();
    h.copied = std::stoull(r.cell(i, 11));
    h.deleting = std::stoull(r.cell(i, 12));
    h.shared_tables = split(r.cell(i, 13), ',');
    for (auto& t : h.shared_tables) t = trim(t);
    if (h.status == "running" || h.copied + h.deleting > 0) out.push_back(std::move(h));
  }
  return out;
}

}  // namespace goarchive::tracking

// Registry: the source a job's unfinished work was recorded for, and the other jobs the unfinished-work guard
// looks at. Reads only.
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
  rs.source.flavor = r.text(0, 0);
  rs.source.host = r.text(0, 1);
  rs.source.port = static_cast<unsigned>(std::stoul(r.text(0, 2)));
  rs.source.database = r.text(0, 3);
  if (!r.is_null(0, 4)) rs.source.server_id = std::stoull(r.text(0, 4));
  rs.source.server_uuid = r.text(0, 5);
  rs.root_table = r.text(0, 6);
  rs.unfinished_roots = std::stoull(r.text(0, 7));
  rs.other_scope_roots = std::stoull(r.text(0, 8));
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
      "   FROM {} t WHERE t.job_id = j.id AND t.table_key IN ({})), "
      "(SELECT g.gtid_state FROM {} g WHERE g.job_id = j.id) "
      "FROM {} j WHERE j.id <> {} AND j.id IN (SELECT job_id FROM {} WHERE table_key IN ({})) ORDER BY j.name",
      "(j." + std::string(k_live_expr).substr(1), table("batches"), table("batches"), table("job_tables"),
      in_list(table_keys), table("job_gtid_states"),
      table("jobs"), self_job_id, table("job_tables"), in_list(table_keys)));
  for (size_t i = 0; i < r.rows(); ++i) {
    GuardHit h;
    h.name = r.text(i, 1);
    h.status = r.text(i, 2);
    h.live = r.text(i, 3) == "1" && h.status == "running";
    h.source.flavor = r.text(i, 4);
    h.source.host = r.text(i, 5);
    h.source.port = static_cast<unsigned>(std::stoul(r.text(i, 6)));
    h.source.database = r.text(i, 7);
    if (!r.is_null(i, 8)) h.source.server_id = std::stoull(r.text(i, 8));
    h.source.server_uuid = r.text(i, 9);
    if (!r.is_null(i, 10)) h.source.gtid_domain = std::stoull(r.text(i, 10));
    // A domain (MariaDB) or UUID (MySQL) is recorded only for a source that could tell its GTID history.
    h.source.gtid_known = !r.is_null(i, 10) || !h.source.server_uuid.empty();
    h.copied = std::stoull(r.text(i, 11));
    h.deleting = std::stoull(r.text(i, 12));
    h.shared_tables = split(r.text(i, 13), ',');
    for (auto& t : h.shared_tables) t = trim(t);
    h.source.gtid_state = r.get(i, 14).value_or("");  // recorded with the source (migration 6); "" before it
    if (h.status == "running" || h.copied + h.deleting > 0) out.push_back(std::move(h));
  }
  return out;
}

}  // namespace goarchive::tracking

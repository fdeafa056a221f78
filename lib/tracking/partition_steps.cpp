#include "tracking/partition_steps.h"

#include <fmt/format.h>

#include "tracking/registry_text.h"

namespace goarchive::tracking {

using detail::preempted;

namespace {

constexpr const char* k_columns =
    "partition_name, side_table, command, detach, state, copied_after, rows_copied, rows_back, version";

PartitionStep step_of(const db::RowSet& r, size_t i) {
  PartitionStep s;
  s.partition = r.text(i, 0);
  s.side_table = r.text(i, 1);
  s.command = r.text(i, 2);
  s.detach = r.text(i, 3);
  s.state = r.text(i, 4);
  s.copied_after = r.get(i, 5);
  s.rows_copied = std::stoull(r.text(i, 6));
  s.rows_back = std::stoull(r.text(i, 7));
  s.version = static_cast<unsigned>(std::stoul(r.text(i, 8)));
  return s;
}

}  // namespace

std::string PartitionSteps::where(const std::string& partition) const {
  return fmt::format("job_id = {} AND scope = {} AND partition_name = {}", m_job_id, sql::quote(m_scope),
                     sql::quote(partition));
}

std::vector<PartitionStep> PartitionSteps::unfinished(db::Connection& conn) const {
  const std::string scope = m_scope.empty() ? "" : " AND scope = " + sql::quote(m_scope);
  db::RowSet r = conn.query(fmt::format("SELECT {} FROM {} WHERE job_id = {}{} AND state NOT IN ('dropped', 'left') "
                                        "ORDER BY partition_name",
                                        k_columns, m_registry.table("partition_steps"), m_job_id, scope));
  std::vector<PartitionStep> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(step_of(r, i));
  return out;
}

std::optional<PartitionStep> PartitionSteps::find(db::Connection& conn, const std::string& partition) const {
  db::RowSet r = conn.query(
      fmt::format("SELECT {} FROM {} WHERE {}", k_columns, m_registry.table("partition_steps"), where(partition)));
  if (r.rows() == 0) return std::nullopt;
  return step_of(r, 0);
}

PartitionStep PartitionSteps::begin(db::Connection& conn, const std::string& partition, const std::string& side_table,
                                    const std::string& command, const std::string& detach,
                                    unsigned long long run_id) const {
  PartitionStep s;
  s.partition = partition;
  s.side_table = side_table;
  s.command = command;
  s.detach = detach;
  s.state = "detaching";
  if (auto earlier = find(conn, partition)) {
    if (earlier->unfinished()) preempted(fmt::format("starting partition {} (its earlier step is {})", partition,
                                                     earlier->state),
                                         0, 1);
    uint64_t n = conn.execute(fmt::format(
        "UPDATE {} SET side_table = {}, command = {}, detach = {}, state = 'detaching', copied_after = NULL, "
        "rows_copied = 0, rows_back = 0, run_id = {}, version = version + 1, updated_at = NOW(6) WHERE {} AND "
        "version = {} AND state IN ('dropped', 'left')",
        m_registry.table("partition_steps"), sql::quote(side_table), sql::quote(command), sql::quote(detach), run_id,
        where(partition), earlier->version));
    if (n != 1) preempted(fmt::format("starting partition {}", partition), n, 1);
    s.version = earlier->version + 1;
    return s;
  }
  // A duplicate key means another session started it first: the guarded write's refusal.
  conn.execute(fmt::format("INSERT INTO {} (job_id, scope, partition_name, side_table, command, detach, state, "
                           "run_id, version) VALUES ({}, {}, {}, {}, {}, {}, 'detaching', {}, 1)",
                           m_registry.table("partition_steps"), m_job_id, sql::quote(m_scope), sql::quote(partition),
                           sql::quote(side_table), sql::quote(command), sql::quote(detach), run_id));
  s.version = 1;
  return s;
}

void PartitionSteps::move(db::Connection& conn, PartitionStep& step, const std::string& to) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET state = {}, version = version + 1, updated_at = NOW(6) WHERE {} AND version = {} AND state = {}",
      m_registry.table("partition_steps"), sql::quote(to), where(step.partition), step.version,
      sql::quote(step.state)));
  if (n != 1) preempted(fmt::format("marking partition {} {}", step.partition, to), n, 1);
  step.state = to;
  ++step.version;
}

void PartitionSteps::copied_upto(db::Connection& conn, PartitionStep& step, const std::string& last_key,
                                 unsigned long long rows, unsigned long long back) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET copied_after = {}, rows_copied = rows_copied + {}, rows_back = rows_back + {}, "
      "version = version + 1, updated_at = NOW(6) WHERE {} AND version = {} AND state = 'detached'",
      m_registry.table("partition_steps"), sql::hex_literal(last_key), rows, back, where(step.partition),
      step.version));
  if (n != 1) preempted(fmt::format("recording the copy of partition {}", step.partition), n, 1);
  step.copied_after = last_key;
  step.rows_copied += rows;
  step.rows_back += back;
  ++step.version;
}

}  // namespace goarchive::tracking

#pragma once
// The partition path's record in the registry (tracking_schema/005_partition_steps.sql): one row per partition a
// job takes whole, written before each step it names, so that a rerun finishes what a run started. Every write
// is a guarded transition (seed 000, I6): it names the state and version it expects and checks the row count.
// It writes only the registry; it never runs DDL and never touches the source.
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"
#include "tracking/registry.h"

namespace goarchive::tracking {

struct PartitionStep {
  std::string partition, side_table, command, detach, state;
  std::optional<std::string> copied_after;  // encoded key (encode_key) of the last row whose copy committed
  unsigned long long rows_copied = 0, rows_back = 0;
  unsigned version = 0;
  // Every state but dropped and left is work a rerun of the same command must finish.
  bool unfinished() const { return state != "dropped" && state != "left"; }
};

class PartitionSteps {
public:
  PartitionSteps(const Registry& registry, unsigned long long job_id, std::string scope)
      : m_registry(registry), m_job_id(job_id), m_scope(std::move(scope)) {}

  // The job's steps in this scope (every scope when it is "") that are not finished (detaching, detached, copied,
  // dropping), by partition name.
  std::vector<PartitionStep> unfinished(db::Connection& conn) const;
  // The step of `partition`, if the job ever took it.
  std::optional<PartitionStep> find(db::Connection& conn, const std::string& partition) const;
  // Records `detaching` for a partition taken now (a new row, or one whose earlier step ended dropped or left),
  // autocommitted before the DDL runs. Returns the step as written.
  PartitionStep begin(db::Connection& conn, const std::string& partition, const std::string& side_table,
                      const std::string& command, const std::string& detach, unsigned long long run_id) const;
  // Moves `step` to `to` (guarded by its state and version), in the caller's transaction on `conn` or
  // autocommitted; updates step.state and step.version.
  void move(db::Connection& conn, PartitionStep& step, const std::string& to) const;
  // Records the copy of rows up to `last_key` (encoded) and the rows counted since the last record, in the
  // caller's destination transaction with that copy (guarded, state detached).
  void copied_upto(db::Connection& conn, PartitionStep& step, const std::string& last_key, unsigned long long rows,
                   unsigned long long back) const;

private:
  std::string where(const std::string& partition) const;

  const Registry& m_registry;
  unsigned long long m_job_id;
  std::string m_scope;
};

}  // namespace goarchive::tracking

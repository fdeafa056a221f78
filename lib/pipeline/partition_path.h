#pragma once
// The partition path (issue 34): a RANGE-partitioned root table with no relations gives each partition that lies
// wholly inside `where` up as one piece instead of row by row. Each partition is detached from the table into a
// side table on the source (MariaDB `CONVERT PARTITION .. TO TABLE`, atomic; MySQL, and the portable path,
// `EXCHANGE PARTITION` with an empty twin), every row of it that does not match `where` goes back to the table in
// one transaction, archive copies the side table into the archive in verified chunks, and the side table is
// dropped. Every step is recorded in the registry before it happens (tracking/partition_steps.h), so a rerun
// finishes what a run started (purge on MariaDB records all its partitions `detaching` at once and their ends at
// once: a rerun reads where each stands from the side table and the layout), and every row is in exactly one of source (table or side table) and archive at
// every instant. Every DDL waits at most ddl_lock_wait_timeout for the table's metadata lock (the application's
// statements queue behind a waiting DDL), retried with backoff; a partition whose DDL keeps giving up is left
// whole in the table for the next run, and its rows stay out of this run's row path.
// It never touches a partition the plan did not choose, never drops a side table before its rows are archived
// and counted, and runs no DDL without the run's locks (the hooks' before_commit).
#include <string>
#include <vector>

#include "pipeline/context.h"
#include "pipeline/partition_plan.h"
#include "tracking/partition_steps.h"

namespace goarchive::pipeline {

class PartitionPath {
public:
  explicit PartitionPath(Context& ctx);

  // Finishes the job's unfinished partition steps (only the command that started them may), then takes every
  // partition the plan says leaves whole. Returns false when a hook said stop. Afterwards `left()` names the
  // partitions whose DDL gave up, whose rows the row path must leave alone this run.
  bool run();
  const std::vector<PartitionChoice>& left() const { return m_left; }

  // The side table a partition of job `job_id` is detached into: "ga_<job id>_<partition>", or, when that is
  // longer than 64 characters, the partition's name replaced by 16 hex digits of its SHA-256. Pure.
  static std::string side_table_name(unsigned long long job_id, const std::string& partition);
  // The condition the row path adds to `where` so that it leaves the rows of `left` partitions alone: NOT (the
  // partitioning expression within each one's bounds). Pure; "" when `left` is empty.
  static std::string exclusion(const std::string& expression, const std::vector<PartitionFacts>& all,
                               const std::vector<PartitionChoice>& left);
  // exclusion() for this run's left partitions, on the layout it read.
  std::string exclusion() const {
    return m_left.empty() || m_layout.empty() ? "" : exclusion(m_layout.front().expression, m_layout, m_left);
  }

private:
  // One step from its recorded state to dropped (or left); false when a hook said stop.
  bool finish(tracking::PartitionStep& step);
  // purge on the CONVERT path: every partition of `whole` recorded `detaching` in one registry transaction, each
  // detached, proven and dropped with no registry write between, and the outcomes recorded in one transaction at
  // the end (a rerun tells where a `detaching` step stands from the side table and the layout: purge_step). False
  // when a hook said stop.
  bool purge_whole(const std::vector<PartitionChoice>& whole);
  // One purge_whole step from `detaching` as far as it goes: the side table there means detached (CONVERT is
  // atomic); else, on a rerun (`fresh` false), the partition gone from the table means dropped; else CONVERT.
  // Returns the state to record: dropped, left (the DDL gave up: nothing moved) or detaching (the side table's
  // drop gave up: the next purge finishes it).
  std::string purge_step(tracking::PartitionStep& step, bool fresh);
  // detaching -> detached (or left when the DDL gives up on the lock); false: left.
  bool detach(tracking::PartitionStep& step);
  // The rows of the side table outside `where` back into the table, in one source transaction.
  void prove_where(tracking::PartitionStep& step);
  // archive: detached -> copied, in verified chunks; false when a hook said stop.
  bool copy(tracking::PartitionStep& step);
  // copied (archive) or dropping (purge) -> dropped.
  bool drop(tracking::PartitionStep& step);
  // Runs `sql` on the source with the job's lock_wait_timeout, through the gate and the lock check, retried with
  // backoff while it times out on the metadata lock; false when it gave up.
  bool ddl(const std::string& sql, const std::string& what);
  // Moves the side-table rows matching `cond` (SQL on the side table aliased as the root table) back into the
  // table, in one source transaction; returns how many.
  unsigned long long move_back(const tracking::PartitionStep& step, const std::string& cond);
  bool table_exists(const std::string& table) const;
  // Warns that a table of the side table's name keeps `partition` whole for a later run.
  void warn_in_the_way(const std::string& partition, const std::string& side_table) const;
  bool has_partition(const std::string& partition) const;  // the root table still has it
  unsigned long long rows_estimate(const std::string& table) const;  // the server's TABLE_ROWS of a source table
  std::string side(const tracking::PartitionStep& step) const;

  Context& m_ctx;
  tracking::PartitionSteps m_steps;
  std::string m_database, m_table;  // the root table on the source
  std::vector<PartitionChoice> m_left;
  std::vector<PartitionFacts> m_layout;
};

}  // namespace goarchive::pipeline

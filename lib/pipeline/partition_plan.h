#pragma once
// Which partitions of a job's root table leave whole (the partition path) and which rows go the row path, and
// why: the layout read from information_schema.PARTITIONS, what the server says about each partition's rows, and
// a pure decision over both (unit-tested without a server). It only reads; it never detaches, copies or drops.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "pipeline/context.h"

namespace goarchive::pipeline {

// One partition as information_schema.PARTITIONS describes it, and what its rows say.
struct PartitionFacts {
  std::string name;
  std::string method;       // RANGE, RANGE COLUMNS, LIST, HASH, ...
  std::string expression;   // the partitioning expression (RANGE) or column list (RANGE COLUMNS)
  std::string description;  // the upper bound: '2026-02-01', 739252, MAXVALUE
  unsigned long long rows_estimate = 0;  // TABLE_ROWS (the statistics' estimate)
  bool subpartitioned = false;
  // Read from the server for the partitions the layout allows (nullopt: not asked).
  std::optional<bool> any_row;        // it holds at least one row
  std::optional<bool> outside_where;  // it holds a row for which `where` is not true
};

enum class PartitionRoute { whole, rows, none };

// The decision for one partition: its path and the reason, for plan, dry-run, validate and the log.
struct PartitionChoice {
  std::string name, description;
  unsigned long long rows_estimate = 0;
  PartitionRoute route = PartitionRoute::rows;
  std::string reason;
};

// Why the whole table takes the row path ("" when its partitions may leave whole): the setting, the mode, the
// job's tree, the layout, the triggers. Pure.
std::string table_route(const config::Job& job, Mode mode, const schema::TableInfo& root,
                        const std::vector<PartitionFacts>& partitions, bool outside_refs);

// Pure: each partition's route under `table_reason` (table_route's answer). A partition leaves whole when it is
// not the last one (new rows land there), holds rows, and every row matches `where`; one with a row outside
// `where` goes the row path; an empty one has nothing to do.
std::vector<PartitionChoice> choose(const std::vector<PartitionFacts>& partitions, const std::string& table_reason);

// The layout of `database`.`table` on `conn` (empty: not partitioned).
std::vector<PartitionFacts> read_partitions(db::Connection& conn, const std::string& database,
                                            const std::string& table);

// The choices for ctx's root table now: reads the layout, asks the server about the rows of each partition the
// layout and the table allow (one scan of each such partition at most), and decides.
std::vector<PartitionChoice> plan_partitions(const Context& ctx, db::Connection& conn);

// The rows for which `where` is not true (false or NULL), in a form the optimizer reads as a range of an index on
// `where`'s column (`NOT ((where) IS TRUE)` it reads as a scan of the whole partition).
std::string not_true(const std::string& where);

// "p2026_01 whole: every row matches where (~3875 rows)" for the log, plan and dry-run.
std::string describe(const PartitionChoice& c);

}  // namespace goarchive::pipeline

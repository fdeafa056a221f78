#pragma once
// The source delete of a batch in one pass (MariaDB's DELETE ... RETURNING), without the locked re-read: each
// statement deletes rows of the batch by integer run or exact key (the roots where they still match `where`) and
// returns every row it deleted. The batch may go only if those are exactly the rows copied, row for row and byte
// for byte (purge: the rows its plain read found; of one table, their keys alone); anything else (a row changed,
// gone, moved or added, a root no longer matching) and the caller rolls back to its savepoint and decides root by
// root under locks (Remover). A tree goes this way only when the database itself refuses to delete a parent row
// that a row of the job's tables still references: then a child added under a root (which no key of the copy
// names) makes the parent's delete fail instead of orphaning it. It runs in the caller's transaction and never
// commits, rolls back or writes the destination.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/context.h"
#include "plan/integer_run.h"

namespace goarchive::pipeline {

class ReturningDelete {
public:
  explicit ReturningDelete(const Context& ctx) : m_ctx(ctx) {}

  // Whether the job's batches may try this path: archive or purge on a MariaDB source, nothing holds its roots
  // (holds.h), the server has not refused the statement before, and the job is one table or a tree the source's
  // foreign keys guard (guarded_tree).
  bool applies() const;
  // applies(), for a batch of this run (not a recovery) whose roots all still go.
  bool applies(const Batch& batch) const;
  // Deletes the batch's rows, child-first, in the caller's source transaction. True when the statements deleted
  // exactly the copied rows (batch.deleted counts them); false with the first difference in `why`, and the caller
  // must roll back what they deleted. A statement the server refuses (its `where` inside a DELETE, say) turns
  // this path off for the run and returns false; lock waits, deadlocks and lost connections throw.
  bool run(Batch& batch, std::string& why) const;
  // What table t's statements return: its key columns alone for a purge of one table (returns_keys_only), else
  // every column, each by its read expression.
  std::string returning_list(size_t t) const;
  bool returns_keys_only() const;
  // The root's keys would go by lists that the source plans slowly for a DELETE (see returning_delete.cpp): they
  // go by ranges of their leading column instead, or not by this path.
  bool slow_key_lists() const;

private:
  // Every relation is a foreign key of the source database that refuses to delete a referenced parent row
  // (RESTRICT, NO ACTION), this session checks foreign keys, and no other foreign key points at a table of the
  // job. A child added under a root, or under any row of its tree, then fails its parent's delete.
  bool guarded_tree() const;
  // The batch's roots' leading key values as unbroken integer runs of at most delete_batch_size, each value once;
  // nothing when they are not (or the column is not an integer column).
  std::optional<std::vector<sql::IntegerRun>> leading_runs(const Batch& batch) const;
  // The statements' conditions for table `t`, each for at most delete_batch_size rows: unbroken integer runs by
  // range, the other keys by exact key (a range of other keys would also lock, and wait for, the application's
  // rows between them); the root's also require that its rows still match `where`.
  std::vector<std::string> conditions(const Batch& batch, size_t t, bool with_where) const;
  // Child table t's rows of the batch through their parents' referenced values (`fk IN (...)`), each statement
  // for the parents of at most delete_batch_size copied rows (more for a parent that has more on its own).
  std::vector<std::string> parent_conditions(const Batch& batch, size_t t) const;
  // Deletes table t's rows of the batch, returning them; false with `why` unless they are exactly the copied ones.
  bool delete_table(Batch& batch, size_t t, std::string& why) const;

  const Context& m_ctx;
  mutable std::atomic<bool> m_refused{false};
  // A table's first statement of the run planned as a scan (its statistics lag: key_index.h): off for the run.
  mutable std::atomic<bool> m_scans{false};
  mutable std::vector<char> m_plan_checked;  // per table: its first statement was EXPLAINed
};

}  // namespace goarchive::pipeline

#pragma once
// The source delete of a batch in one pass (MariaDB's DELETE ... RETURNING), without the locked re-read: child-first,
// each table's statements delete the batch's rows and return every row they deleted; a child table goes through the
// keys of its parent rows (so that a row added under them is deleted, returned and seen), the root table by integer
// run or exact key where its roots still match `where`. The batch may go only if every table returned exactly the
// rows copied, row for row and byte for byte; anything else (a row changed, gone, moved or added, a root no longer
// matching, a parent still referenced) and the caller rolls back to its savepoint and decides root by root under
// locks (Remover). Every relation must be a foreign key in the database that restricts deletes, and the source
// session must check foreign keys: a row added under a parent after that parent's children were deleted then makes
// the parent's delete fail instead of leaving the row orphaned. It runs in the caller's transaction and never
// commits, rolls back or writes the destination.
#include <atomic>
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/context.h"

namespace goarchive::pipeline {

class ReturningDelete {
public:
  explicit ReturningDelete(const Context& ctx) : m_ctx(ctx) {}

  // Whether the job's batches may try this path: archive on a MariaDB source, nothing that holds a root
  // (holds.h), every table with one parent through a foreign key in the database that restricts deletes and
  // compares bytes (not a collation), and the server has not refused the statement before.
  bool applies() const;
  // applies(), for a batch of this run (not a recovery) whose roots all still go, on a source session that checks
  // foreign keys (asked once per run, for jobs of more than one table).
  bool applies(const Batch& batch) const;
  // Deletes the batch's rows in the caller's source transaction. True when every statement deleted exactly the
  // copied rows (batch.deleted counts them); false with the first difference in `why`, and the caller must roll
  // back what they deleted. A statement the server refuses (its `where` inside a DELETE, say) turns this path
  // off for the run and returns false; lock waits, deadlocks and lost connections throw.
  bool run(Batch& batch, std::string& why) const;

private:
  // The root's conditions, each for at most delete_batch_size roots where they still match `where`: unbroken
  // integer runs by range (stopping at their n-th row), the other keys by exact key (a range of other keys would
  // also lock, and wait for, the application's rows between them).
  std::vector<std::string> root_conditions(const Batch& batch) const;
  // A child table's conditions: its foreign key IN the referenced values of every copied parent row, chunked at
  // about delete_batch_size copied children.
  std::vector<std::string> child_conditions(const Batch& batch, int ni) const;
  // Whether `got`, what table `ni`'s statements returned, is exactly the copied rows; else the first difference.
  bool same_rows(const Batch& batch, int ni, const db::RowSet& got, std::string& why) const;

  const Context& m_ctx;
  mutable std::atomic<bool> m_refused{false};
  mutable std::atomic<int> m_fk_checks{-1};  // the source session's @@foreign_key_checks; -1: not asked yet
};

}  // namespace goarchive::pipeline

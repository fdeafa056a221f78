#pragma once
// The source delete of a single-table batch in one pass (MariaDB's DELETE ... RETURNING), without the locked
// re-read: each statement deletes the batch's roots, by integer run or exact key, where they still match `where`,
// and returns every row it deleted. The batch may go only if those are exactly the rows copied, row for row and
// byte for byte; anything else (a root changed, gone or no longer matching) and the caller rolls back to its
// savepoint and decides root by root under locks (Remover). It runs in the caller's transaction and never commits,
// rolls back or writes the destination.
#include <atomic>
#include <string>

#include "pipeline/batch.h"
#include "pipeline/context.h"

namespace goarchive::pipeline {

class ReturningDelete {
public:
  explicit ReturningDelete(const Context& ctx) : m_ctx(ctx) {}

  // Whether the job's batches may try this path: archive of a job of one table with nothing that holds its roots
  // (holds.h), on a MariaDB source, and the server has not refused the statement before.
  bool applies() const;
  // applies(), for a batch of this run (not a recovery) whose roots all still go.
  bool applies(const Batch& batch) const;
  // Deletes the batch's roots in the caller's source transaction. True when the statements deleted exactly the
  // copied rows (batch.deleted counts them); false with the first difference in `why`, and the caller must roll
  // back what they deleted. A statement the server refuses (its `where` inside a DELETE, say) turns this path
  // off for the run and returns false; lock waits, deadlocks and lost connections throw.
  bool run(Batch& batch, std::string& why) const;

private:
  // The statements' conditions, each for at most delete_batch_size roots where they still match `where`: unbroken
  // integer runs by range, the other keys by exact key (a range of other keys would also lock, and wait for, the
  // application's rows between them).
  std::vector<std::string> conditions(const Batch& batch) const;

  const Context& m_ctx;
  mutable std::atomic<bool> m_refused{false};
};

}  // namespace goarchive::pipeline

#pragma once
// The source delete of a batch, and the one place that decides whether a root may leave the source (the rule
// of DESIGN.md §5, enforced in judge()): under row locks it re-reads the batch's tree, compares it byte for byte
// with what was copied, settles each root's fate, deletes the roots that may go (child-first, by exact primary
// key), records its decision on the destination and commits, all in one source transaction. It never writes
// the archived rows.
#include <chrono>
#include <future>

#include "pipeline/batch.h"
#include "pipeline/batch_log.h"
#include "pipeline/context.h"
#include "pipeline/returning_delete.h"
#include "pipeline/rows.h"
#include "pipeline/tree_reader.h"
#include "plan/sql.h"

namespace goarchive::pipeline {

class Remover {
public:
  Remover(const Context& ctx, const TreeReader& tree, const BatchLog& log)
      : m_ctx(ctx), m_tree(tree), m_log(log), m_returning(ctx) {}

  // Locks, compares, deletes, records the decision (archive: the move to deleting, on ctx.marks) and commits
  // the source; fills batch.fate, batch.deleted and batch.t_delete. Source connection and ctx.marks only (it
  // runs on the worker thread in the pipelined loop).
  void remove(Batch& batch) const;

private:
  // A batch in one pass (returning_delete.h: one table, or a tree its foreign keys guard), in `tx` after its
  // savepoint: true when it deleted exactly the copied rows, with the decision recorded; false when it rolled back
  // to the savepoint, or found a table's definition changed (checked first, before any row lock: nothing
  // deleted), the proof stamped and the decision recorded that the caller's replaces.
  bool delete_returning(Batch& batch) const;
  // Records the batch's decision (archive: its move to deleting) on ctx.marks, on a thread of its own; an empty
  // future where the mode records none. The batch must not change until the future is ready.
  std::future<unsigned> record_decision(const Batch& batch) const;
  // Sizes the batches after this one from its lock window, under lock_time (batch_sizer.h); logs a move.
  void size_next(const Batch& batch) const;
  // The source commit of a batch, between its fault points, right after the lock sets' check.
  void commit(Batch& batch, db::Transaction& tx, std::chrono::steady_clock::time_point t0) const;
  // False when a table of the job changed its definition since the run started: then every root stays (an
  // unproven batch throws instead, rolling back). Source connection only.
  bool definitions_unchanged(Batch& batch) const;
  // Which roots of `batch` must stay in the source, given the locked tree `now` and, per locked root row,
  // whether it still matches `where`. A root may go only if, under the locks, it still matches `where`, every
  // row copied for it is there unchanged under it, and no row was added to its tree; and nothing holds it (holds.h):
  // no row of its tree still belongs to a parent that stays in the source, none is referenced from outside the
  // job, and it shares no row with a root that stays.
  void judge(Batch& batch, const Batch& now, const std::vector<bool>& matches) const;
  void compare_table(Batch& batch, const Batch& now, size_t t) const;
  // Recovery of a deleting batch: a root gone from the source whose copied rows are still there (by primary
  // key, locked) was not deleted by the interrupted transaction; nothing proves which version is current.
  void check_gone_roots(Batch& batch, const Batch& now) const;
  void delete_rows(Batch& batch, const Batch& now) const;
  // Deletes the rows of `going` (table `ni`) whose integer keys form unbroken runs, by key range; returns the
  // others, for the exact-key lists.
  // The rows of `tb` whose root moves and that are not `gone` yet.
  static std::vector<size_t> moving(const Batch& batch, const TableRows& tb, const std::vector<bool>& gone);
  // The rows `going` of table `ni` whose primary keys run unbroken, as ranges (none at REPEATABLE READ); the
  // other rows go to `rest`.
  std::vector<KeyRange> key_runs(int ni, const TableRows& tb, const std::vector<size_t>& going,
                                 std::vector<size_t>& rest) const;
  // Deletes each range with `ORDER BY key LIMIT n`; each must remove exactly its n locked rows, or this throws.
  void delete_ranges(Batch& batch, int ni, const std::vector<KeyRange>& ranges) const;
  // Deletes the children of table `ni` through their parents' keys where that is proved safe; marks them `gone`.
  void delete_through_parent(Batch& batch, const Batch& now, int ni, std::vector<bool>& gone) const;
  // One statement of delete_through_parent: the children of parent VALUES, which must be exactly the locked ROWS
  // (else the transaction rolls back); marks them gone and empties both lists.
  void delete_children_of(Batch& batch, int ni, std::vector<sql::KeyLiterals>& values, std::vector<size_t>& rows,
                          std::vector<bool>& gone) const;

  const Context& m_ctx;
  const TreeReader& m_tree;
  const BatchLog& m_log;
  ReturningDelete m_returning;
};

}  // namespace goarchive::pipeline

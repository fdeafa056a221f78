#pragma once
// What keeps a root in the source although its own tree may be unchanged (DESIGN.md §4, diamonds and outside
// references): a row of its tree that still belongs to a parent row staying in the source, rows of a table
// outside the job that still reference its tree (a RESTRICT / NO ACTION foreign key), or a row it shares with
// another root of the batch that stays. Such a root is left `blocked`: it stays in the source, its archived copy
// is removed, and the run still succeeds. copy-only deletes nothing and preflight refuses its diamond jobs, so it
// has nothing to check here. It only reads: plainly in the reader's snapshot (so that blocked roots are not copied
// at all), and under the delete's locks in the Remover, where the decision is made.
#include <string>

#include "pipeline/batch.h"
#include "pipeline/context.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class Holds {
public:
  explicit Holds(const Context& ctx) : m_ctx(ctx) {}

  // True when the job has anything to check (a diamond, or a foreign key from outside).
  bool any() const;
  // Every check, in order: parents staying in the source, outside references, shared rows. `tree` holds the rows
  // read (the batch itself, or the Remover's locked re-read); the fates go into `batch`. Locked: the parent rows
  // are read FOR UPDATE and the referencing rows LOCK IN SHARE MODE, in the caller's transaction.
  void check(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const;

private:
  // A row whose parent (through an edge other than the one it was found by) is neither in a tree of this batch
  // nor gone from the source: its root is blocked.
  void parents(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const;
  // The same for the rows of one table (`rows`, of `m`) through one of its edges.
  void parents_through(db::Connection& conn, const Batch& tree, Read read, const TableMeta& m, const TableRows& rows,
                       const EdgeMeta& e, Batch& batch) const;
  // Rows still referenced from outside the job: their roots are blocked.
  void outside(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const;
  // Roots joined by a row found through parents of both move together: when one stays, all of them stay.
  void shared(const Batch& tree, Batch& batch) const;
  void block(Batch& batch, int root, const std::string& why) const;

  const Context& m_ctx;
};

}  // namespace goarchive::pipeline

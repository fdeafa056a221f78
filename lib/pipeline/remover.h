#pragma once
// The source delete of a batch, and the one place that decides whether a root may leave the source: under row
// locks, it re-reads the batch's tree, compares it with what was copied, settles each root's fate and deletes
// the roots that may go, child-first, by exact primary key, in one source transaction. It never writes to the
// destination.
#include "pipeline/batch.h"
#include "pipeline/context.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class Remover {
public:
  Remover(const Context& ctx, const TreeReader& tree) : m_ctx(ctx), m_tree(tree) {}

  // Locks, compares, deletes and commits; fills batch.fate, batch.deleted and batch.t_delete. Runs on the
  // source connection only (on the worker thread in the pipelined loop).
  void remove(Batch& batch) const;

private:
  // The rule of DESIGN.md §5: which roots of `batch` must stay in the source, given the locked tree `now`.
  void judge(Batch& batch, const Batch& now) const;
  void delete_rows(Batch& batch, const Batch& now) const;

  const Context& m_ctx;
  const TreeReader& m_tree;
};

}  // namespace goarchive::pipeline

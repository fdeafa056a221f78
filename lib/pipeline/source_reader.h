#pragma once
// The source side's plain reads: the next batch of roots by keyset and their trees, or the trees of known roots
// (recovery), each in one consistent snapshot without locks (seed 000, I3). It never locks, writes or deletes.
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/context.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class SourceReader {
public:
  SourceReader(const Context& ctx, const TreeReader& tree) : m_ctx(ctx), m_tree(tree) {}

  // Fills `batch` with the roots after `after` in key order and their trees, on the context's read connection
  // (beside the delete on `src` in the pipelined loop). With `skip_copied` (copy-only, restore), roots this job
  // copied before are left out (restore: also the copies the copy-only sweep kept as a gone root's only version). Returns the key of the last root the keyset read returned, empty
  // when no root is left.
  std::vector<std::string> read_next(Batch& batch, const std::vector<std::string>* after, bool skip_copied) const;
  // Reads the trees of the batch's known roots (recovery), on `src`. A root that no longer matches `where` is
  // withdrawn: its rows are not read and its fate says so.
  void read_known(Batch& batch) const;

private:
  void leave_held(db::Connection& src, Batch& batch) const;

  const Context& m_ctx;
  const TreeReader& m_tree;
};

}  // namespace goarchive::pipeline

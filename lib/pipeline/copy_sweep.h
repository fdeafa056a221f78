#pragma once
// Copies that copy-only made earlier and that went stale: before a copy-only or archive run of the same job
// takes new batches, every root this job marked as copied is compared with the source. A copy whose root is gone
// from the source, no longer matches `where`, or whose tree changed (a row changed, added, removed, or moved to
// another root) is removed from the destination and its mark forgotten, so that the run copies the current
// version (or nothing). Of a copy whose root is gone from the source (the application, a purge or another job
// deleted or re-keyed it), only the rows the source still holds go: the others are kept, the only version of
// their rows. Only the destination is written.
#include "pipeline/context.h"
#include "pipeline/destination_writer.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class CopySweep {
public:
  CopySweep(Context& ctx, const TreeReader& tree, DestinationWriter& writer)
      : m_ctx(ctx), m_tree(tree), m_writer(writer) {}

  // Returns false when a hook said stop before every mark was looked at.
  bool run();

private:
  // One page of marks: compares, then removes the stale copies and their marks in one destination transaction.
  void sweep(const std::vector<tracking::RootKey>& marks);
  // The copies of `roots` (in `archive`, as the destination holds them), whose root rows are gone from the source:
  // keeps, from the root down, the rows the source no longer holds by primary key (the only version of each) under
  // a kept parent; removes the others: the rows the source still holds (re-keyed or moved there; they are copied
  // again under their current root) and those below them. Returns the rows kept.
  size_t keep_only_versions(const Batch& archive, const std::vector<int>& roots);

  Context& m_ctx;
  const TreeReader& m_tree;
  DestinationWriter& m_writer;
};

}  // namespace goarchive::pipeline

#pragma once
// Copies that copy-only made earlier and that went stale: before a copy-only or archive run of the same job
// takes new batches, every root this job marked as copied is compared with the source. A copy whose root is gone
// from the source, no longer matches `where`, or whose tree changed (a row changed, added, removed, or moved to
// another root) is removed from the destination and its mark forgotten, so that the run copies the current
// version (or nothing). Copy-only never deletes from the source, so the source holds every row such a copy was
// made of, or the application deleted it: removing the copy never loses a row. Only the destination is written.
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

  Context& m_ctx;
  const TreeReader& m_tree;
  DestinationWriter& m_writer;
};

}  // namespace goarchive::pipeline

#pragma once
// Finishes the unfinished batches this job left in the registry (a crash, a kill, a failure) before any new
// batch: each is adopted by this run with a guarded write and taken through every stage again. It never
// starts new work. The adoption itself (adopt_unfinished) is restore's too.
#include <functional>
#include <utility>

#include "pipeline/batch_log.h"
#include "pipeline/context.h"
#include "pipeline/stages.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

// The job's unfinished roots (copied, deleting) in this scope; throws (exit 1, naming the command to run) when a
// command other than ctx's wrote some of them: a batch is finished only by the mode that wrote it.
std::pair<unsigned long long, unsigned long long> unfinished_work(const Context& ctx);
// Adopts the job's unfinished batches (in this scope) in registry order, a page at a time: each is numbered after
// `batch_no`, given its roots, adopted by this run with a guarded write and handed with its registry row to `each`.
// False when a hook said stop at the boundary before a page.
bool adopt_unfinished(const Context& ctx, const BatchLog& log, unsigned& batch_no,
                      const std::function<void(Batch& batch, const tracking::BatchRow& row)>& each);

class Recovery {
public:
  Recovery(Context& ctx, const BatchLog& log, Stages& stages) : m_ctx(ctx), m_log(log), m_stages(stages) {}

  // Returns false when a hook said stop before every unfinished batch was finished.
  bool run(unsigned& batch_no);
  // Looks at the job's open conflicts: one whose root is now on one side only, or the same on both, is
  // resolved; the others are skipped by every batch and counted (the run then exits 1).
  void review_conflicts(const TreeReader& tree);

private:
  // A deleting batch with a commit proof: whether its delete committed, from the source (commit_proof.h).
  void prove(Batch& batch) const;
  // True when a row of `root`'s tree in `from` is on `side` by primary key.
  bool any_row_on(Side side, const Batch& from, int root) const;

  Context& m_ctx;
  const BatchLog& m_log;
  Stages& m_stages;
};

}  // namespace goarchive::pipeline

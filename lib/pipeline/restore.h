#pragma once
// restore: the batch pipeline with its two ends swapped (DESIGN.md §5). The Context's `src` is the archive, read
// by keyset with the restore's `where` and emptied at the end of each batch; its `dst` is the source, written and
// verified. A batch goes: plain read of the archive -> copy into the source, its commit proof stamped in the same
// transaction, verified -> the claim with that proof recorded on the archive's registry -> the source commits ->
// one archive transaction re-reads the archived tree under locks, compares it with what went back, removes it
// child-first and ends the batch in the registry. A crash anywhere leaves at most one unfinished batch, which the
// rerun finishes from its proof: committed means the rows are back and the archived copy goes; rolled back means
// the rows never left the archive. A key already in the source is never overwritten: that root stays archived.
// It owns the order of these steps; the parts it drives (reader, writer, remover, batch log) own the SQL.
#include <chrono>
#include <functional>
#include <memory>

#include "pipeline/batch.h"
#include "pipeline/batch_log.h"
#include "pipeline/context.h"
#include "pipeline/destination_writer.h"
#include "pipeline/remover.h"
#include "pipeline/source_reader.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class Restore {
public:
  Restore(Context& ctx, const TreeReader& tree, const SourceReader& reader, DestinationWriter& writer,
          const Remover& remover, const BatchLog& log)
      : m_ctx(ctx), m_tree(tree), m_reader(reader), m_writer(writer), m_remover(remover), m_log(log) {}

  // Finishes this job's unfinished restore batches, then restores batch after batch until no archived root
  // matches or a hook says stop (false).
  bool run(unsigned& batch_no);

private:
  // The unfinished batches a crash left, each settled from its commit proof. False when a hook said stop.
  bool recover(unsigned& batch_no);
  // Reads and copies back batch after batch, handing each to `remove` (which owns it from then on). False when a
  // hook said stop.
  bool run_batches(unsigned& batch_no, const std::function<void(std::unique_ptr<Batch>)>& remove);
  // After the batch's read (started at t0): its held roots leave it, the rest is copied back. False when no root
  // of it went back.
  bool copy_batch(Batch& batch, std::chrono::steady_clock::time_point t0);
  // Copies the batch into the source and commits it there, its claim and proof recorded first; roots that cannot
  // go back leave the batch (and stay archived). The batch may end up empty.
  void copy_back(Batch& batch);
  // A root of the batch that stays in the archive, and why; `back` when the source holds it already, unchanged.
  void keep(Batch& batch, size_t root, const std::string& why, bool back);
  // The archive side: the archived tree removed (or kept, --keep-archive) and the batch ended, in one transaction
  // on `src`. Runs on the worker: it reads the batch and writes its fates and counts, nothing else.
  void remove_archived(Batch& batch);
  void account(Batch& batch);

  Context& m_ctx;
  const TreeReader& m_tree;
  const SourceReader& m_reader;
  DestinationWriter& m_writer;
  const Remover& m_remover;
  const BatchLog& m_log;
};

}  // namespace goarchive::pipeline

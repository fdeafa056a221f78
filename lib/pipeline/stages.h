#pragma once
// The stages of one batch and what ties them to the registry: prepare (one destination transaction: the end of
// earlier batches, the claim, the copy and its verification), the source delete, and the end (done, archived
// copies of roots that stayed removed). Both loops and the recovery run batches through these; none of them
// owns a thread.
#include <functional>
#include <memory>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/batch_log.h"
#include "pipeline/context.h"
#include "pipeline/destination_writer.h"
#include "pipeline/remover.h"
#include "pipeline/source_reader.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class Stages {
public:
  Stages(Context& ctx, const TreeReader& tree, const SourceReader& reader, DestinationWriter& writer,
         const Remover& remover, const BatchLog& log)
      : m_ctx(ctx), m_tree(tree), m_reader(reader), m_writer(writer), m_remover(remover), m_log(log) {}

  // Reads the registry state the stages depend on (copy-only marks of this job). Call once per run.
  void start();
  // The destination side of a batch in one transaction: the end of `finished` batches, this batch's claim,
  // its rows and their verification. One commit per batch on the destination.
  // `settle`, when given, waits for the batch whose delete is under way and adds it to `finished` (false: there
  // was none); prepare calls it once before it takes a row already in the destination for a conflict.
  void prepare(Batch& batch, std::vector<Batch*>& finished,
               const std::function<bool(std::vector<Batch*>&)>& settle = {});
  // prepare() with the end of `pending` folded in. `settle` waits for what is still under way (moving it into
  // `pending`); when the batch fails, the end of `pending` is recorded on its own before the failure goes on.
  void prepare_after(Batch& batch, std::vector<std::unique_ptr<Batch>>& pending, const std::function<void()>& settle);
  // Statements and key lists of a batch, built ahead of its copy (reads the batch only).
  void prebuild(Batch& batch) const { m_writer.prebuild(batch); }
  // The source side of a batch (source connection only).
  void remove(Batch& batch) const { m_remover.remove(batch); }
  // Records the end of batches in one destination transaction of their own.
  void finish(std::vector<Batch*>& batches);
  void finish_all(std::vector<std::unique_ptr<Batch>>& batches);
  // A batch through every stage, one after another (recovery). A batch found deleting is not copied again:
  // its archived copy is read back and the delete compares the source with it (Batch::unproven).
  void process(Batch& batch);
  // Recovery, before any batch is copied again: removes the destination copy of a batch whose source delete
  // never committed (its rows are all still in the source), in a transaction of its own. No-op in purge.
  void remove_copy(Batch& batch);

private:
  // Inside the caller's transaction: the batch is done; archived copies of roots that stayed go with it.
  void write_end(Batch& batch);
  // Before the copy: replaces copies this job made earlier (recovery, copy-only marks) with current versions.
  void replace_earlier_copies(Batch& batch);
  // A row of the batch conflicts with its archived version: records the conflict, drops its root from the batch.
  void park_conflict(Batch& batch, const RowConflict& e);
  // A root the copy cannot archive (RootStays) leaves the batch and this run, reported, with nothing recorded.
  void leave_in_source(Batch& batch, const RootStays& e);
  // Counts a batch whose end is committed.
  void account(Batch& batch);
  // The batch's source lock window, into the run's counters.
  void count_locks(const Batch& batch);
  // Reads what the destination holds for the batch's roots into the batch, as what was copied.
  void read_archived_copy(Batch& batch) const;

  Context& m_ctx;
  const TreeReader& m_tree;
  const SourceReader& m_reader;
  DestinationWriter& m_writer;
  const Remover& m_remover;
  const BatchLog& m_log;
  bool m_has_copied_marks = false;  // archive after copy-only: roots this job copied before may need a refresh
};

}  // namespace goarchive::pipeline

#pragma once
// A batch's life in the tracking registry (DESIGN.md §7): its claim, its moves copied -> deleting -> done, its
// adoption by a recovering run, and copy-only's per-root marks. Every write is a guarded transition (seed 000,
// I6). It writes only registry tables, inside the caller's destination transaction unless it says otherwise.
#include "pipeline/batch.h"
#include "pipeline/context.h"

namespace goarchive::pipeline {

class BatchLog {
public:
  explicit BatchLog(Context& ctx) : m_ctx(ctx) {}

  // Claims a new batch (I2) in the state its mode starts with; a recovered batch keeps its row.
  void claim(Batch& batch) const { claim(batch, m_ctx.reg()); }
  // The same on `conn`, a session on the registry's server in a transaction of the caller's (restore's claim,
  // beside the archive removal under way on `src`).
  void claim(Batch& batch, db::Connection& conn) const;
  // Moves the batch to done; the new version counts once the caller's transaction commits (next_version).
  void end(Batch& batch) const;
  // archive: moves the batch to deleting, with the roots its delete keeps in the source and its commit proof, in
  // a transaction of its own on `conn`, committed before the source delete commits. Only reads the batch (its
  // id, version, roots, fates and proof), so it may run beside the source delete's statements; returns the
  // batch's version after it (unchanged when there is nothing to record).
  unsigned mark_deleting(const Batch& batch, db::Connection& conn) const;
  // Whether mark_deleting records anything for this batch.
  bool marks_deleting(const Batch& batch) const { return m_ctx.mode == Mode::archive && batch.id != 0; }
  // Takes over an unfinished batch of an earlier run (recovery), in a transaction of its own.
  void adopt(Batch& batch, unsigned recorded_version) const;
  // copy-only: remembers the batch's roots as copied by this job.
  void mark_copied(const Batch& batch) const;
  // Records the batch's conflicting roots; every later run leaves them alone until one version is removed.
  void record_conflicts(const Batch& batch) const;

private:
  Context& m_ctx;
};

}  // namespace goarchive::pipeline

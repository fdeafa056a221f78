#include "pipeline/batch_log.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/fault.h"

namespace goarchive::pipeline {

void BatchLog::claim(Batch& batch, db::Connection& conn) const {
  if (batch.recovery) return;  // a recovered batch keeps its row and claims; it was adopted before it started
  if (batch.roots.empty()) return;  // every root of it became a conflict: nothing to log
  std::string state = m_ctx.mode == Mode::purge ? "deleting" : "copied";
  // The batch's root keys travel as one hex literal: it must fit the destination's max_allowed_packet.
  size_t bytes = 1024;
  for (const auto& r : batch.roots) bytes += 2 * (r.encoded.size() + 4);
  if (bytes > conn.max_allowed_packet()) {
    throw Error(fmt::format("the root keys of a batch of {} roots of table {} take {} bytes as SQL text, more than "
                            "the destination's max_allowed_packet ({} bytes); nothing of this batch was written. "
                            "Lower batch_size",
                            batch.roots.size(), m_ctx.root().node.table, bytes, conn.max_allowed_packet()));
  }
  batch.id = m_ctx.registry.claim_batch(conn, m_ctx.job_id, m_ctx.run_id, batch.no, m_ctx.scope, batch.roots,
                                        state);
  batch.version = 1;
}

void BatchLog::end(Batch& batch) const {
  if (batch.id == 0) return;
  auto stayed = static_cast<unsigned>(batch.count(RootFate::changed) + batch.count(RootFate::withdrawn) +
                                      batch.count(RootFate::blocked) +
                                      batch.count(RootFate::conflict));
  batch.next_version =
      m_ctx.registry.transition(m_ctx.reg(), batch.id, {"copied", "deleting"}, "done", batch.version, stayed);
}

unsigned BatchLog::mark_deleting(const Batch& batch, db::Connection& conn) const {
  // purge claims its batches as deleting; copy-only never deletes
  if (!marks_deleting(batch)) return batch.version;
  // Conflicts are not recorded as kept: a later recovery must compare those roots again, never drop a copy.
  std::vector<tracking::RootKey> kept;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (batch.fate[i] == RootFate::changed || batch.fate[i] == RootFate::withdrawn ||
        batch.fate[i] == RootFate::blocked) {
      kept.push_back(batch.roots[i]);
    }
  }
  db::Transaction tx(conn);
  unsigned v = m_ctx.registry.transition(conn, batch.id, {"copied", "deleting"}, "deleting", batch.version);
  // Only a recovered batch can have an earlier decision (a retry within a run goes through recovery too): it is
  // replaced, or removed when this one keeps no root.
  if (!kept.empty() || batch.recovery) m_ctx.registry.record_stayed(conn, batch.id, kept);
  m_ctx.registry.record_proof(conn, batch.id, batch.proof);
  m_ctx.hooks.before_commit();
  tx.commit();
  fault::point("after_mark_deleting");
  return v;
}

void BatchLog::adopt(Batch& batch, unsigned recorded_version) const {
  db::Transaction tx(m_ctx.reg());
  batch.version = m_ctx.registry.adopt(m_ctx.reg(), batch.id, m_ctx.run_id, batch.no, recorded_version);
  fault::point("before_adopt_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
}

void BatchLog::record_conflicts(const Batch& batch) const {
  std::vector<tracking::RootKey> keys;
  for (int r : batch.roots_with(RootFate::conflict)) keys.push_back(batch.roots[static_cast<size_t>(r)]);
  m_ctx.registry.add_conflicts(m_ctx.reg(), m_ctx.job_id, batch.id, keys);
}

void BatchLog::mark_copied(const Batch& batch) const {
  std::vector<std::string> hashes, keys;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (batch.stays(i)) continue;  // blocked (a diamond row whose other parent is not archived): not copied
    hashes.push_back(batch.roots[i].hash);
    keys.push_back(batch.roots[i].encoded);
  }
  m_ctx.registry.mark_roots(m_ctx.reg(), m_ctx.job_id, hashes, "copied", &keys);
}

}  // namespace goarchive::pipeline

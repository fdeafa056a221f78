#include "pipeline/copy_sweep.h"

#include <spdlog/spdlog.h>

#include "util/fault.h"

namespace goarchive::pipeline {

bool CopySweep::run() {
  if (m_ctx.mode == Mode::purge) return true;
  std::string after;
  while (true) {
    if (!m_ctx.hooks.boundary("copy sweep")) return false;
    auto marks = m_ctx.registry.marked_keys(m_ctx.dst, m_ctx.job_id, "copied", after,
                                            static_cast<size_t>(m_ctx.job.processing.batch_size));
    if (marks.empty()) return true;
    after = marks.back().hash;
    sweep(marks);
  }
}

void CopySweep::sweep(const std::vector<tracking::RootKey>& marks) {
  Batch source, archive;
  for (const auto& m : marks) {
    source.add_root(tracking::decode_key(m.encoded));
    archive.add_root(tracking::decode_key(m.encoded));
  }
  source.tables.resize(m_ctx.tables.size());
  archive.tables.resize(m_ctx.tables.size());
  std::vector<bool> matches;
  {
    m_ctx.src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    db::Transaction snapshot(m_ctx.src, true, true);
    m_tree.read_roots(m_ctx.src, Side::source, source, Read::plain, &matches);
    m_tree.read_children(m_ctx.src, Side::source, source, Read::plain);
    snapshot.commit();
  }
  std::vector<bool> current(marks.size(), false), present(marks.size(), false);
  for (size_t r = 0; r < source.tables[0].size(); ++r) {
    int owner = source.tables[0].root[r];
    if (owner < 0) continue;
    present[static_cast<size_t>(owner)] = true;
    if (matches[r]) current[static_cast<size_t>(owner)] = true;
  }
  db::Transaction tx(m_ctx.dst);
  m_tree.read_roots(m_ctx.dst, Side::destination, archive, Read::plain);
  m_tree.read_children(m_ctx.dst, Side::destination, archive, Read::plain);
  std::vector<int> stale;
  std::vector<std::string> hashes;
  size_t kept = 0;
  for (size_t i = 0; i < marks.size(); ++i) {
    int r = static_cast<int>(i);
    if (current[i] && same_tree(source, archive, r)) continue;
    hashes.push_back(marks[i].hash);
    // A root gone from the source (the application, a purge or another job's archive deleted it) leaves this copy
    // as its only version: never removed, only no longer this job's to replace.
    if (!present[i]) {
      ++kept;
      continue;
    }
    stale.push_back(r);
  }
  if (hashes.empty()) return;
  if (!stale.empty()) m_writer.remove_tree_copies(archive, stale);
  m_ctx.registry.unmark(m_ctx.dst, m_ctx.job_id, hashes);
  fault::point("before_sweep_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
  if (kept) {
    spdlog::info("{} earlier copy-only cop{} of roots no longer in the source {} kept in the archive as their only "
                 "version", kept, kept == 1 ? "y" : "ies", kept == 1 ? "is" : "are");
  }
  if (stale.empty()) return;
  spdlog::info("{} earlier copy-only cop{} went stale and {} removed; the current version is copied again if it "
               "still matches `where`",
               stale.size(), stale.size() == 1 ? "y" : "ies", stale.size() == 1 ? "was" : "were");
}

}  // namespace goarchive::pipeline

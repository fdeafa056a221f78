#include "pipeline/copy_sweep.h"

#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/rows.h"
#include "plan/sql.h"
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
  std::vector<int> stale, gone;
  std::vector<std::string> hashes;
  for (size_t i = 0; i < marks.size(); ++i) {
    int r = static_cast<int>(i);
    if (current[i] && same_tree(source, archive, r)) continue;
    hashes.push_back(marks[i].hash);
    (present[i] ? stale : gone).push_back(r);
  }
  if (hashes.empty()) return;
  if (!stale.empty()) m_writer.remove_tree_copies(archive, stale);
  const size_t kept = keep_only_versions(archive, gone);
  m_ctx.registry.unmark(m_ctx.dst, m_ctx.job_id, hashes);
  // A gone root's kept copy is the only version of rows the application deleted, never archived by this job:
  // restore leaves it alone.
  std::vector<std::string> kept_roots;
  for (int r : gone) kept_roots.push_back(archive.roots[static_cast<size_t>(r)].hash);
  m_ctx.registry.mark_roots(m_ctx.dst, m_ctx.job_id, kept_roots, "kept");
  fault::point("before_sweep_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
  if (kept) {
    spdlog::info("{} row(s) of earlier copy-only copies of roots no longer in the source are kept in the archive as "
                 "their only version",
                 kept);
  }
  if (stale.empty()) return;
  spdlog::info("{} earlier copy-only cop{} went stale and {} removed; the current version is copied again if it "
               "still matches `where`",
               stale.size(), stale.size() == 1 ? "y" : "ies", stale.size() == 1 ? "was" : "were");
}

size_t CopySweep::keep_only_versions(const Batch& archive, const std::vector<int>& roots) {
  if (roots.empty()) return 0;
  const size_t n = m_ctx.tables.size();
  std::vector<std::vector<size_t>> remove(n);
  // Per table: the encoded referenced values of its rows kept, as each child table's foreign key names them
  // ("child:value"). A row is kept only under a kept parent, so the kept rows stay one tree and none is orphaned.
  std::vector<std::set<std::string>> kept_refs(n);
  size_t kept = 0;
  for (int ni : m_ctx.copy_order) {  // parent-first
    const size_t t = static_cast<size_t>(ni);
    const TableMeta& m = m_ctx.tables[t];
    const TableRows& tb = archive.tables[t];
    std::vector<size_t> rows;
    for (int r : roots) {
      auto mine = tb.rows_of(r);
      rows.insert(rows.end(), mine.begin(), mine.end());
    }
    if (rows.empty()) continue;
    std::set<std::string> in_source;
    std::vector<size_t> all(m.key_cols.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    // A key-only read: through a join on the key's index, which no statistics turn into a scan (key_index.h).
    const std::string key_list = joined_columns(m.source_name, m.key_cols);
    for (const auto& join :
         m_ctx.indexes.joins(m_ctx.src, m.source_name, m.key_cols, primary_keys(m, tb.rows, rows))) {
      db::RowSet got = m_ctx.src.query(fmt::format("SELECT {} FROM {}", key_list, join));
      for (size_t i = 0; i < got.rows(); ++i) in_source.insert(encode_values(got, i, all));
    }
    for (size_t r : rows) {
      // A row the source still holds goes (it is copied again under its current root); so does one whose parent
      // goes: the application deleted it under a parent that lives on, as a copy of a live tree loses it.
      const bool under_kept = m.node.parent < 0 ||
                              kept_refs[static_cast<size_t>(m.node.parent)].count(
                                  std::to_string(t) + ":" + encode_values(tb.rows, r, m.fk_idx)) > 0;
      if (in_source.count(encode_values(tb.rows, r, m.key_idx)) || !under_kept) {
        remove[t].push_back(r);
        continue;
      }
      ++kept;
      for (size_t c = 0; c < n; ++c) {
        if (m_ctx.tables[c].node.parent != static_cast<int>(t)) continue;
        kept_refs[t].insert(std::to_string(c) + ":" + encode_values(tb.rows, r, m_ctx.tables[c].parent_ref_idx));
      }
    }
  }
  m_writer.remove_rows(archive, remove);
  return kept;
}

}  // namespace goarchive::pipeline

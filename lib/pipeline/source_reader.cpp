#include "pipeline/source_reader.h"

#include <optional>
#include <set>

#include "pipeline/holds.h"
#include "pipeline/rows.h"

namespace goarchive::pipeline {

std::vector<std::string> SourceReader::read_next(Batch& batch, const std::vector<std::string>* after,
                                                 bool skip_copied) const {
  const TableMeta& root = m_ctx.root();
  db::Connection& src = m_ctx.read_conn();
  batch.tables.assign(m_ctx.tables.size(), TableRows{});
  // A job of one table with nothing that holds its roots reads a batch in one statement, which is a consistent
  // snapshot of its own (autocommit): no transaction, three round trips fewer per batch. Anything more (children,
  // outside references) is read in one REPEATABLE READ snapshot, all tables as of the same instant.
  std::optional<db::Transaction> snapshot;
  if (m_ctx.tables.size() > 1 || Holds(m_ctx).any()) {
    src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    snapshot.emplace(src, true, true);
  }
  // When nothing matches, the walk by the primary key would read the whole table to say so: ask first.
  db::RowSet rows;
  if (after || src.scalar(m_tree.any_root_query()).value_or("1") != "0") {
    rows = src.query(m_tree.keyset_query(after, root.select_list));
  }
  std::vector<std::string> last;
  std::vector<std::vector<std::string>> keys;
  for (size_t r = 0; r < rows.rows(); ++r) {
    std::vector<std::string> key;
    for (size_t i : root.key_idx) key.push_back(rows.text(r, i));
    keys.push_back(std::move(key));
  }
  if (!keys.empty()) last = keys.back();
  const size_t read = rows.rows();
  std::vector<tracking::RootKey> encoded;
  encoded.reserve(read);
  for (const auto& k : keys) encoded.push_back(tracking::encode_key(k));
  std::set<std::string> skip = m_ctx.skip_roots.copy();  // open conflicts: left alone until a person decides
  if (skip_copied && !keys.empty()) {
    std::vector<std::string> hashes;
    for (const auto& rk : encoded) hashes.push_back(rk.hash);
    auto done = m_ctx.registry.marked(m_ctx.marks_reads(), m_ctx.job_id, hashes, "copied");
    skip.insert(done.begin(), done.end());
    if (m_ctx.restores()) {
      // Copies the copy-only sweep kept as the only version of a root the application deleted: never archived.
      auto kept = m_ctx.registry.marked(m_ctx.marks_reads(), m_ctx.job_id, hashes, "kept");
      skip.insert(kept.begin(), kept.end());
    }
  }
  bool every_row = true;
  for (const auto& rk : encoded) every_row = every_row && !skip.count(rk.hash);
  TableRows& tb = batch.tables[0];
  if (every_row) {
    // Nothing skipped (the usual case): the rows read become the batch's as they are, without a copy.
    rows.set_columns(root.columns);
    tb.rows = std::move(rows);
  } else {
    tb.rows.set_columns(root.columns);
  }
  for (size_t r = 0; r < read; ++r) {
    if (!every_row && skip.count(encoded[r].hash)) continue;  // copied before by this job (copy-only), or in conflict
    int owner = static_cast<int>(batch.roots.size());
    batch.add_root(std::move(encoded[r]), std::move(keys[r]));
    if (!every_row) append_row(tb.rows, rows, r);
    tb.index(encode_values(tb.rows, tb.key.size(), root.key_idx), owner);
  }
  m_tree.read_children(src, Side::source, batch, Read::plain);
  leave_held(src, batch);
  if (snapshot) snapshot->commit();
  batch.loaded = true;
  return last;
}

void SourceReader::read_known(Batch& batch) const {
  db::Connection& src = m_ctx.src;
  batch.tables.assign(m_ctx.tables.size(), TableRows{});
  batch.fate.assign(batch.roots.size(), RootFate::moved);
  // One consistent snapshot for the whole tree: every table is read as of the same instant, without locks.
  src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  db::Transaction snapshot(src, true, true);
  std::vector<bool> matches;
  m_tree.read_roots(src, Side::source, batch, Read::plain, &matches);
  // A root that no longer matches `where` (the application revived it) is not archived by the recovery.
  std::vector<bool> withdrawn(batch.roots.size(), false);
  const TableRows& roots = batch.tables[0];
  for (size_t r = 0; r < roots.size(); ++r) {
    int owner = roots.root[r];
    if (owner >= 0 && !matches[r]) {
      withdrawn[static_cast<size_t>(owner)] = true;
      batch.fate[static_cast<size_t>(owner)] = RootFate::withdrawn;
    }
  }
  batch.drop_rows_of(withdrawn);
  m_tree.read_children(src, Side::source, batch, Read::plain);
  leave_held(src, batch);
  snapshot.commit();
  batch.loaded = true;
}

// Roots already held in the snapshot are not copied at all (a copy of a row whose other parent is not archived
// would fail the archive's foreign-key check); the Remover decides again, under its locks, for the others.
void SourceReader::leave_held(db::Connection& src, Batch& batch) const {
  Holds holds(m_ctx);
  if (!holds.any()) return;
  holds.check(src, batch, Read::plain, batch);
  std::vector<bool> drop(batch.roots.size(), false);
  for (int r : batch.roots_with(RootFate::blocked)) drop[static_cast<size_t>(r)] = true;
  batch.drop_rows_of(drop);
}

}  // namespace goarchive::pipeline

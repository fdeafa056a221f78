#include "pipeline/remover.h"

#include <chrono>

#include <fmt/format.h>

#include "pipeline/rows.h"
#include "util/fault.h"

namespace goarchive::pipeline {

void Remover::remove(Batch& batch) const {
  auto t0 = std::chrono::steady_clock::now();
  batch.deleted.assign(m_ctx.tables.size(), 0);
  if (batch.fate.size() != batch.roots.size()) batch.fate.assign(batch.roots.size(), RootFate::moved);
  // Lock exactly the rows to delete, parent-first, at READ COMMITTED (record locks only, no gap locks), and
  // re-read them: a row changed or added since the copy marks its root, and such a root is not deleted.
  Batch now;
  now.no = batch.no;
  now.root_keys = batch.root_keys;
  now.tables.resize(m_ctx.tables.size());
  db::Transaction tx(m_ctx.src);
  m_tree.read_roots(m_ctx.src, Side::source, now, Read::locked);
  m_tree.read_children(m_ctx.src, Side::source, now, Read::locked);
  if (m_ctx.mode == Mode::archive) judge(batch, now);
  delete_rows(batch, now);
  fault::point("before_delete_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
  fault::point("after_delete_commit");
  batch.t_delete = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Remover::judge(Batch& batch, const Batch& now) const {
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableRows& locked = now.tables[t];
    const TableRows& copied = batch.tables[t];
    for (size_t r = 0; r < locked.size(); ++r) {
      int owner = locked.root[r];
      if (owner < 0 || batch.stays(static_cast<size_t>(owner))) continue;
      auto at = copied.find(locked.key[r]);
      bool changed = !at;
      if (!changed && m_ctx.sha256()) changed = row_digest(locked.rows, r) != copied.digest[*at];
      if (changed) {
        batch.leave(static_cast<size_t>(owner), RootFate::changed,
                    fmt::format("{} {}", name_row(m_ctx.tables[t], locked.rows, r), at ? "changed" : "was added"));
      }
    }
  }
}

void Remover::delete_rows(Batch& batch, const Batch& now) const {
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  for (int ni : m_ctx.delete_order) {
    const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
    const TableRows& tb = now.tables[static_cast<size_t>(ni)];
    std::vector<sql::KeyLiterals> keys;
    for (size_t r = 0; r < tb.size(); ++r) {
      int owner = tb.root[r];
      if (owner < 0 || batch.stays(static_cast<size_t>(owner))) continue;
      keys.push_back(literals(tb.rows, r, m.key_idx, m.key_binary));
    }
    // By exact key only: no range locks, so the application's inserts are never blocked.
    for (const auto& list : key_lists(m.key_cols, keys, statement_budget(m_ctx.src), "", per_statement)) {
      batch.deleted[static_cast<size_t>(ni)] +=
          m_ctx.src.execute(fmt::format("DELETE FROM {} WHERE {}", m.source_name, list));
    }
  }
}

}  // namespace goarchive::pipeline

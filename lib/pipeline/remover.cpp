#include "pipeline/remover.h"

#include <chrono>

#include <fmt/format.h>

#include "pipeline/holds.h"
#include "pipeline/rows.h"
#include "util/fault.h"

namespace goarchive::pipeline {

void Remover::remove(Batch& batch) const {
  auto t0 = std::chrono::steady_clock::now();
  batch.deleted.assign(m_ctx.tables.size(), 0);
  if (batch.fate.size() != batch.roots.size()) batch.fate.assign(batch.roots.size(), RootFate::moved);
  Batch now;
  now.no = batch.no;
  now.root_keys = batch.root_keys;
  now.tables.resize(m_ctx.tables.size());
  // READ COMMITTED: the locked reads and the deletes by exact key take record locks only, so the application's
  // inserts are never blocked. A relation with no foreign key in the database needs REPEATABLE READ for this
  // one transaction: the locked read of the children then also locks the gaps of their foreign-key index, and a
  // child inserted under a root being deleted waits for the commit instead of being orphaned unseen.
  if (m_ctx.gap_locks) m_ctx.src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  db::Transaction tx(m_ctx.src);
  std::vector<bool> matches;
  m_tree.read_roots(m_ctx.src, Side::source, now, Read::locked, &matches);
  m_tree.read_children(m_ctx.src, Side::source, now, Read::locked);
  fault::point("after_locked_read");
  if (batch.unproven) check_gone_roots(batch, now);
  judge(batch, now, matches);
  delete_rows(batch, now);
  // The decision is on the destination before the source commits: a recovery that finds the batch deleting
  // knows which roots this transaction kept, whether or not it committed.
  m_log.mark_deleting(batch, m_ctx.marks ? *m_ctx.marks : m_ctx.dst);
  fault::point("before_delete_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
  fault::point("after_delete_commit");
  batch.t_delete = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Remover::judge(Batch& batch, const Batch& now, const std::vector<bool>& matches) const {
  if (m_ctx.mode == Mode::archive) {
    for (size_t t = 0; t < m_ctx.tables.size(); ++t) compare_table(batch, now, t);
  }
  const TableRows& roots = now.tables[0];
  for (size_t r = 0; r < roots.size(); ++r) {
    if (roots.root[r] >= 0 && !matches[r]) {
      batch.leave(static_cast<size_t>(roots.root[r]), RootFate::withdrawn,
                  name_row(m_ctx.root(), roots.rows, r) + " no longer matches `where`");
    }
  }
  // Last, because a root that stays for any reason above also keeps the roots it shares a row with.
  Holds(m_ctx).check(m_ctx.src, now, Read::locked, batch);
}

// Every copied row must be in the locked tree, under the same root, byte-equal; every locked row must have been
// copied. Otherwise the roots involved stay: changed (their archived copy goes, the source keeps the current
// version) or, when the copy may be the only version left (recovery of a deleting batch), conflict.
void Remover::compare_table(Batch& batch, const Batch& now, size_t t) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& copied = batch.tables[t];
  const TableRows& locked = now.tables[t];
  const RootFate differs = batch.unproven ? RootFate::conflict : RootFate::changed;
  // Recovering a deleting batch, a root gone from the source was deleted by the interrupted transaction, which
  // committed: its archived copy is the archive. (Had it rolled back, the root would be there.)
  std::vector<bool> present(batch.roots.size(), !batch.unproven);
  for (int owner : now.tables[0].root) {
    if (owner >= 0) present[static_cast<size_t>(owner)] = true;
  }
  for (size_t r = 0; r < copied.size(); ++r) {
    int owner = copied.root[r];
    if (owner < 0 || !present[static_cast<size_t>(owner)]) continue;
    auto at = locked.find(copied.key[r]);
    if (!at) {
      batch.leave(static_cast<size_t>(owner), differs, name_row(m, copied.rows, r) + " is gone from its tree");
    } else if (locked.root[*at] != owner) {
      std::string why = name_row(m, copied.rows, r) + " moved to another root";
      batch.leave(static_cast<size_t>(owner), differs, why);
      if (locked.root[*at] >= 0) batch.leave(static_cast<size_t>(locked.root[*at]), differs, why);
    } else if (!same_row(copied.rows, r, locked.rows, *at)) {
      batch.leave(static_cast<size_t>(owner), differs, name_row(m, copied.rows, r) + " changed");
    }
  }
  for (size_t r = 0; r < locked.size(); ++r) {
    if (locked.root[r] >= 0 && !copied.find(locked.key[r])) {
      batch.leave(static_cast<size_t>(locked.root[r]), differs, name_row(m, locked.rows, r) + " was added");
    }
  }
}

void Remover::check_gone_roots(Batch& batch, const Batch& now) const {
  std::vector<bool> present(batch.roots.size(), false);
  for (int owner : now.tables[0].root) {
    if (owner >= 0) present[static_cast<size_t>(owner)] = true;
  }
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    const TableRows& copied = batch.tables[t];
    std::vector<size_t> rows;
    for (size_t r = 0; r < copied.size(); ++r) {
      if (copied.root[r] >= 0 && !present[static_cast<size_t>(copied.root[r])]) rows.push_back(r);
    }
    for (const auto& list : primary_key_lists(m, copied.rows, rows, statement_budget(m_ctx.src))) {
      db::RowSet found = m_ctx.src.query(fmt::format("SELECT {} FROM {} WHERE {} FOR UPDATE",
                                                     sql::ident_list(m.key_cols), m.source_name, list));
      std::vector<size_t> all(found.cols());
      for (size_t c = 0; c < all.size(); ++c) all[c] = c;
      for (size_t r = 0; r < found.rows(); ++r) {
        auto at = copied.find(encode_values(found, r, all));
        if (!at) continue;
        batch.leave(static_cast<size_t>(copied.root[*at]), RootFate::conflict,
                    name_row(m, copied.rows, *at) + " is still in the source, but its root is gone");
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

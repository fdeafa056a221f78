#include "pipeline/remover.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/commit_proof.h"
#include "pipeline/definitions.h"
#include "pipeline/holds.h"
#include "pipeline/rows.h"
#include "plan/integer_run.h"
#include "util/error.h"
#include "util/fault.h"

namespace goarchive::pipeline {

void Remover::remove(Batch& batch) const {
  auto t0 = std::chrono::steady_clock::now();
  batch.deleted.assign(m_ctx.tables.size(), 0);
  batch.locked_since = {};
  batch.t_locked = 0;
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
  fault::point("delete_start");
  const bool returning = m_returning.applies(batch);
  if (returning && delete_returning(batch)) {
    commit(batch, tx, t0);
    return;
  }
  std::vector<bool> matches;
  if (batch.locked_since == std::chrono::steady_clock::time_point{}) batch.locked_since = std::chrono::steady_clock::now();
  m_tree.read_roots(m_ctx.src, Side::source, now, Read::locked, &matches);
  m_tree.read_children(m_ctx.src, Side::source, now, Read::locked);
  fault::point("after_locked_read");
  // Nothing is deleted after a table changed its definition: every root stays, and the batch's end removes its
  // copy.
  const bool deletes = definitions_unchanged(batch);
  if (deletes) {
    if (batch.unproven) check_gone_roots(batch, now);
    judge(batch, now, matches);
  }
  // The commit proof rides in this transaction, inserted before the decision below can be recorded: a recovery
  // that finds the batch deleting and reads the proof under a lock waits for this transaction. A decision made
  // on an unproven copy carries none, so that its recovery compares versions again. (A failed delete_returning
  // stamped it already.)
  // restore: the proof rode in the copy into the source; this transaction removes the archived rows.
  if (!returning && !m_ctx.restores()) batch.proof = batch.unproven || batch.id == 0 ? "" : m_ctx.proof->stamp(batch.id);
  // The decision is on the destination before the source commits: a recovery that finds the batch deleting
  // knows which roots this transaction kept, and from the proof whether it committed. It is recorded on its own
  // session while the deletes run, and the commit waits for it.
  std::future<unsigned> marked = record_decision(batch);
  try {
    if (deletes && m_ctx.removes_from_src()) delete_rows(batch, now);
  } catch (...) {
    if (marked.valid()) marked.wait();  // a decision recorded for a delete that rolls back: recovery finds no proof
    throw;
  }
  if (marked.valid()) batch.version = marked.get();
  commit(batch, tx, t0);
}

// Here, as the delete commits, rather than when the batch's end is written: the batch after this one is read
// already, and the one after that is read beside this delete's successor.
void Remover::size_next(const Batch& batch) const {
  if (!m_ctx.sizer || !m_ctx.sizer->sizing()) return;
  if (size_t n = m_ctx.sizer->observe(batch.roots.size(), batch.t_locked)) {
    spdlog::info("lock_time {:g} ms: batch {}'s delete held its rows {:.1f} ms for {} root(s); the next batches "
                 "take {} root(s){}",
                 m_ctx.job.processing.lock_time * 1000, batch.no, batch.t_locked * 1000, batch.roots.size(), n,
                 n == m_ctx.sizer->fewest() ? " (the fewest it takes)" : "");
  }
}

std::future<unsigned> Remover::record_decision(const Batch& batch) const {
  if (!m_log.marks_deleting(batch)) return {};
  db::Connection& conn = m_ctx.marks ? *m_ctx.marks : m_ctx.dst;
  return std::async(std::launch::async, [this, &batch, &conn] { return m_log.mark_deleting(batch, conn); });
}

void Remover::commit(Batch& batch, db::Transaction& tx, std::chrono::steady_clock::time_point t0) const {
  // restore: the registry shares the archive's server, so the batch ends in this very transaction.
  // With --keep-archive the archived copy stays as a copy of the job (as copy-only's): later restores skip it, and
  // archive replaces it with the current version.
  if (m_ctx.restores()) {
    m_log.end(batch);
    if (m_ctx.keep_archive) m_log.mark_copied(batch);
  }
  fault::point("before_delete_commit");
  // Right before the commit, never beside the DELETEs: a DELETE may wait for an application's row lock for as
  // long as innodb_lock_wait_timeout, and a lock set lost meanwhile must stop this commit (tests/faults c2).
  m_ctx.hooks.before_commit();
  tx.commit();
  const auto committed = std::chrono::steady_clock::now();
  if (batch.locked_since != std::chrono::steady_clock::time_point{}) {
    batch.t_locked = std::chrono::duration<double>(committed - batch.locked_since).count();
    size_next(batch);
  }
  if (m_ctx.restores() && batch.id != 0) batch.version = batch.next_version;
  fault::point("after_delete_commit");
  batch.t_delete = std::chrono::duration<double>(committed - t0).count();
}

// The proof first, then the decision that every root goes (on its own session, beside the metadata locks and the
// definitions), then the deletes that return what they removed. When that is not exactly what was copied, or a
// table's definition changed, the deletes roll back to the savepoint, whose locks the transaction keeps; the
// caller then decides root by root, and its decision replaces this one before the commit. A crash in between
// leaves a decision whose proof never committed: the recovery finds the delete rolled back.
// The rows' locks are held from the first DELETE to the commit, so that the decision (a destination commit, often
// longer than the DELETEs) is not waited for in that window: the first DELETE starts once it is recorded. Only
// the lock sets' check (seed 001) stands between the last DELETE and the commit.
bool Remover::delete_returning(Batch& batch) const {
  batch.proof = m_ctx.proof->stamp(batch.id);
  std::future<unsigned> marked = record_decision(batch);
  auto settle = [&] {
    if (marked.valid()) batch.version = marked.get();
  };
  bool done = false;
  std::string why;
  try {
    if (m_ctx.definitions) {
      // The definitions before any row lock: a locking read of no rows takes each table's metadata lock for
      // writing, which this transaction holds to its end, so a definition still the run's start's cannot change
      // before the commit; the application's rows are not held while the definitions are compared (SHOW CREATE
      // TABLE of a table of many partitions takes milliseconds). FOR UPDATE: the DELETE then needs no stronger
      // lock than it holds (a plain read's lock, upgraded by the DELETE while an ALTER waits for the table, is a
      // deadlock whose victim is the DELETE: measured, error 1213).
      for (const auto& m : m_ctx.tables) {
        m_ctx.src.query(fmt::format("SELECT 1 FROM {} LIMIT 0 FOR UPDATE", m.source_name));
      }
      if (auto changed = m_ctx.definitions->check(m_ctx.src, m_ctx.tables)) {
        settle();  // the caller's decision replaces this one
        spdlog::debug("batch {}: {}; deciding root by root under locks", batch.no, *changed);
        return false;
      }
    }
    m_ctx.src.execute("SAVEPOINT goarchive_delete");
    settle();
    batch.locked_since = std::chrono::steady_clock::now();
    done = m_returning.run(batch, why);
    fault::point("after_returning_delete");
  } catch (...) {
    if (marked.valid()) marked.wait();
    throw;
  }
  if (done) return true;
  spdlog::debug("batch {}: {}; deciding root by root under locks", batch.no, why);
  m_ctx.src.execute("ROLLBACK TO SAVEPOINT goarchive_delete");
  batch.deleted.assign(m_ctx.tables.size(), 0);
  return false;
}

// The locked reads hold the metadata locks of every table of the job until this transaction ends: a table whose
// definition is still the run's start's cannot change before the commit, so every column of every row was read
// and compared. After a change (a column added, say), rows read with the start's column list may not go: a new
// column's values would be lost.
bool Remover::definitions_unchanged(Batch& batch) const {
  if (!m_ctx.definitions) return true;
  auto why = m_ctx.definitions->check(m_ctx.src, m_ctx.tables);
  if (!why) return true;
  // A copy that may be the only version left (recovery of a deleting batch) is never removed on a guess: the
  // transaction rolls back and the batch stays as it is for the rerun.
  if (batch.unproven) throw Error(*why);
  spdlog::error("batch {}: {}; every root of this batch stays in the source", batch.no, *why);
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    batch.leave(i, RootFate::changed, "the definition of a table changed during the run");
  }
  return false;
}

void Remover::judge(Batch& batch, const Batch& now, const std::vector<bool>& matches) const {
  if (m_ctx.mode == Mode::archive || m_ctx.restores()) {
    for (size_t t = 0; t < m_ctx.tables.size(); ++t) compare_table(batch, now, t);
  }
  // restore: the copy into the source has committed, so the rows are back whatever `where` or a parent in the
  // archive says now (both were decided before the copy); only an archived row that changed since it was read
  // keeps its root's copy, which may then be the only one of its version.
  if (m_ctx.restores()) return;
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
    // A key-only locked read: through a join on the key's index, which no statistics turn into a scan that
    // would wait for every row the application holds (key_index.h).
    const std::string key_list = joined_columns(m.source_name, m.key_cols);
    for (const auto& join :
         m_ctx.indexes.joins(m_ctx.src, m.source_name, m.key_cols, primary_keys(m, copied.rows, rows))) {
      db::RowSet found = m_ctx.src.query(fmt::format("SELECT {} FROM {} FOR UPDATE", key_list, join));
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

// A child table goes through its parent's referenced values (`fk IN (...)`: one range of the foreign key's
// index per parent, where a list of composite keys is slow to plan and may even make the server scan the
// table) when the locked read has proved the set complete: the relation is a foreign key in the source
// database (so InnoDB indexes it) and this transaction holds every parent row's lock, so the application
// can neither insert a child under them nor move one there until it commits (the foreign-key check waits
// for the parent's lock). Only values whose every parent row and every locked child belong to roots that
// move qualify, compared byte for byte (collated foreign keys keep the exact keys), and each statement must
// delete exactly the locked rows it stands for, else the whole transaction rolls back.
namespace {

// The parent side of a delete through the parent's key: each referenced value of the locked parent rows, in
// order, whether every parent row with it moves, and its literals.
struct ParentValues {
  std::map<std::string, bool> moves;  // encoded parent value -> every parent row (and locked child) with it moves
  std::map<std::string, sql::KeyLiterals> literal;
  std::vector<std::string> order;
};

}  // namespace

void Remover::delete_through_parent(Batch& batch, const Batch& now, int ni, std::vector<bool>& gone) const {
  const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
  const TableRows& tb = now.tables[static_cast<size_t>(ni)];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  const size_t budget = statement_budget(m_ctx.src);
  auto moves = [&](int owner) { return owner >= 0 && !batch.stays(static_cast<size_t>(owner)); };
  // Only through the one parent a table has: a diamond's rows may hang under a further parent too.
  if (m.node.parent < 0 || !m.node.also.empty() || m.collated_fk || m.config_only || tb.size() == 0) return;
  const TableRows& parent = now.tables[static_cast<size_t>(m.node.parent)];
  ParentValues pv;
  for (size_t r = 0; r < parent.size(); ++r) {
    if (any_null(parent.rows, r, m.parent_ref_idx)) continue;
    std::string v = encode_values(parent.rows, r, m.parent_ref_idx);
    auto [it, fresh] = pv.moves.emplace(v, moves(parent.root[r]));
    if (!fresh) {
      it->second = it->second && moves(parent.root[r]);
      continue;
    }
    pv.literal.emplace(v, wrap(literals(parent.rows, r, m.parent_ref_idx, m.fk_binary, m.fk_integer), m.fk_wrap));
    pv.order.push_back(std::move(v));
  }
  std::map<std::string, std::vector<size_t>> children;  // encoded foreign-key value -> locked rows
  bool all_known = true;
  for (size_t r = 0; r < tb.size(); ++r) {
    std::string v = any_null(tb.rows, r, m.fk_idx) ? std::string() : encode_values(tb.rows, r, m.fk_idx);
    if (tb.root[r] < 0 || v.empty() || !pv.moves.count(v)) all_known = false;
    if (!moves(tb.root[r])) pv.moves[v] = false;
    children[v].push_back(r);
  }
  // Unless every locked row maps to a parent value of this batch, the exact keys only.
  if (!all_known) return;
  std::vector<sql::KeyLiterals> chunk;
  std::vector<size_t> chunk_rows;
  size_t bytes = 0;
  for (const std::string& v : pv.order) {
    auto kids = children.find(v);
    if (!pv.moves[v] || kids == children.end()) continue;
    const sql::KeyLiterals& lit = pv.literal[v];
    size_t size = 8;
    for (const auto& x : lit) size += x.size() + 2;
    if (!chunk.empty() && (chunk_rows.size() + kids->second.size() > per_statement || bytes + size > budget)) {
      delete_children_of(batch, ni, chunk, chunk_rows, gone);
      bytes = 0;
    }
    chunk.push_back(lit);
    chunk_rows.insert(chunk_rows.end(), kids->second.begin(), kids->second.end());
    bytes += size;
  }
  delete_children_of(batch, ni, chunk, chunk_rows, gone);
}

void Remover::delete_children_of(Batch& batch, int ni, std::vector<sql::KeyLiterals>& values,
                                 std::vector<size_t>& rows, std::vector<bool>& gone) const {
  if (values.empty()) return;
  const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
  // Through a join on the foreign key's index (one ref lookup per parent value): a single-table DELETE takes no
  // index hint, whatever the statistics say (key_index.h).
  uint64_t n = 0;
  for (const auto& join : key_joins(m.node.foreign_key, values, m.source_name,
                                    m_ctx.indexes.hint(m_ctx.src, m.source_name, m.node.foreign_key),
                                    static_cast<size_t>(-1))) {
    n += m_ctx.src.execute("DELETE " + m.source_name + " FROM " + join);
  }
  if (n != rows.size()) {
    throw Error(fmt::format("table {}: deleting the children of {} parent row(s) removed {} rows where {} were "
                            "locked and compared; nothing of this batch was deleted (the transaction rolled "
                            "back). The rerun retries the batch",
                            m.node.table, values.size(), n, rows.size()));
  }
  for (size_t r : rows) gone[r] = true;
  batch.deleted[static_cast<size_t>(ni)] += n;
  values.clear();
  rows.clear();
}

// Rows whose integer keys are an unbroken run (the usual AUTO_INCREMENT batch, also under a tenant id) go by
// range: `id BETWEEN lo AND hi ORDER BY id LIMIT n` matches exactly the locked keys (no other whole number lies
// between), is one index range instead of n lookups, and stops at its n-th row, so it never reads, let alone
// locks or waits for, the row after the range. Never at REPEATABLE READ (gap locks: the range would lock the gap
// before its first row), never for a locked read (that read cannot know how many rows it will find).
std::vector<KeyRange> Remover::key_runs(int ni, const TableRows& tb, const std::vector<size_t>& going,
                                        std::vector<size_t>& rest) const {
  if (m_ctx.gap_locks) {
    rest.insert(rest.end(), going.begin(), going.end());
    return {};
  }
  return key_ranges(m_ctx.tables[static_cast<size_t>(ni)], tb.rows, going,
                    static_cast<size_t>(m_ctx.job.processing.delete_batch_size), rest);
}

void Remover::delete_ranges(Batch& batch, int ni, const std::vector<KeyRange>& ranges) const {
  const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
  const std::string order = sql::ident_list(m.key_cols);
  for (const auto& range : ranges) {
    uint64_t n = m_ctx.src.execute(
        fmt::format("DELETE FROM {} WHERE {} ORDER BY {} LIMIT {}", m.source_name, range.where, order, range.count));
    if (n != range.count) {
      throw Error(fmt::format("table {}: deleting {} keys from ({}) removed {} rows where {} were locked and "
                              "compared; nothing of this batch was deleted (the transaction rolled back). The rerun "
                              "retries the batch",
                              m.node.table, range.count, range.first, n, range.count));
    }
    batch.deleted[static_cast<size_t>(ni)] += n;
  }
}

std::vector<size_t> Remover::moving(const Batch& batch, const TableRows& tb, const std::vector<bool>& gone) {
  std::vector<size_t> out;
  for (size_t r = 0; r < tb.size(); ++r) {
    int owner = tb.root[r];
    if (!gone[r] && owner >= 0 && !batch.stays(static_cast<size_t>(owner))) out.push_back(r);
  }
  return out;
}

void Remover::delete_rows(Batch& batch, const Batch& now) const {
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  for (int ni : m_ctx.delete_order) {
    const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
    const TableRows& tb = now.tables[static_cast<size_t>(ni)];
    std::vector<bool> gone(tb.size(), false);  // deleted through the parent's key
    // Keys that run unbroken go by primary-key range, the cheapest exact delete; a table whose keys do not (a
    // composite key with a DATE column, say) goes through its parents' keys where that is exact, and the rest
    // of its rows by range or exact key.
    std::vector<size_t> rest;
    std::vector<KeyRange> ranges = key_runs(ni, tb, moving(batch, tb, gone), rest);
    if (!rest.empty()) {
      delete_through_parent(batch, now, ni, gone);
      // Rebuilt only when the parents' keys took rows (a table with several parents, say, goes by key only).
      if (std::find(gone.begin(), gone.end(), true) != gone.end()) {
        rest.clear();
        ranges = key_runs(ni, tb, moving(batch, tb, gone), rest);
      }
    }
    delete_ranges(batch, ni, ranges);
    // By exact key only: no range locks, so the application's inserts are never blocked. Through a join on the
    // key's index: a single-table DELETE takes no index hint, whatever the statistics say (key_index.h).
    for (const auto& join :
         m_ctx.indexes.joins(m_ctx.src, m.source_name, m.key_cols, primary_keys(m, tb.rows, rest), per_statement)) {
      batch.deleted[static_cast<size_t>(ni)] += m_ctx.src.execute("DELETE " + m.source_name + " FROM " + join);
    }
  }
}

}  // namespace goarchive::pipeline

#include "pipeline/stages.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/commit_proof.h"
#include "pipeline/rows.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<int> all_roots(const Batch& batch) {
  std::vector<int> roots(batch.roots.size());
  for (size_t i = 0; i < roots.size(); ++i) roots[i] = static_cast<int>(i);
  return roots;
}

}  // namespace

void Stages::start() {
  m_has_copied_marks =
      m_ctx.mode == Mode::archive && m_ctx.registry.count_marked(m_ctx.dst, m_ctx.job_id, "copied") > 0;
}

void Stages::replace_earlier_copies(Batch& batch) {
  if (batch.recovery) {
    // This job copied these roots before it stopped, and its delete never committed (a batch moves to deleting
    // before its source delete commits): every row of that copy is still in the source, or the application
    // deleted it since. Replace the copy with the current version of each root that still matches `where`,
    // and drop it for the others (no longer matching, or gone: deleted or re-keyed by the application). The
    // recovery removed it already (remove_copy); this finds what a run stopped in between left.
    m_writer.remove_tree_copies(batch, all_roots(batch));
    return;
  }
  if (!m_has_copied_marks) return;
  // archive after copy-only of the same job: the earlier copy of these roots is this job's own; replace it with
  // the current version (a row may have changed since), then forget the mark.
  std::vector<std::string> hashes;
  for (const auto& rk : batch.roots) hashes.push_back(rk.hash);
  auto marked = m_ctx.registry.marked(m_ctx.dst, m_ctx.job_id, hashes, "copied");
  if (marked.empty()) return;
  std::set<std::string> set(marked.begin(), marked.end());
  std::vector<int> roots;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (set.count(batch.roots[i].hash)) roots.push_back(static_cast<int>(i));
  }
  m_writer.remove_tree_copies(batch, roots);
  m_ctx.registry.unmark(m_ctx.dst, m_ctx.job_id, marked);
}

void Stages::remove_copy(Batch& batch) {
  if (!m_ctx.copies()) return;
  db::Transaction tx(m_ctx.dst);
  m_writer.remove_tree_copies(batch, all_roots(batch));
  fault::point("before_remove_copy_commit");
  m_ctx.hooks.before_commit();
  tx.commit();
}

void Stages::prepare(Batch& batch, std::vector<Batch*>& finished,
                     const std::function<bool(std::vector<Batch*>&)>& settle) {
  spdlog::info("batch {} start: {} root(s){}", batch.no, batch.roots.size(), batch.recovery ? " (recovery)" : "");
  m_ctx.stats.t_select += batch.t_read;
  if (batch.fate.size() != batch.roots.size()) batch.fate.assign(batch.roots.size(), RootFate::moved);
  m_ctx.hooks.progress(m_ctx.stats, "copying");
  auto t0 = std::chrono::steady_clock::now();
  bool settled = !settle;
  while (true) {
    m_writer.prebuild(batch);
    batch.copied.assign(m_ctx.tables.size(), 0);
    batch.verified.assign(m_ctx.tables.size(), 0);
    try {
      db::Transaction tx(m_ctx.dst);
      for (Batch* f : finished) write_end(*f);
      m_log.claim(batch);
      if (m_ctx.copies()) {
        replace_earlier_copies(batch);
        m_writer.copy(batch);
        spdlog::info("batch {} verification start: method {}", batch.no,
                     config::to_string(m_ctx.job.processing.verification));
        m_writer.verify(batch);
        fault::point("after_verify");
      }
      fault::point("before_copy_commit");
      m_ctx.hooks.before_commit();
      tx.commit();
      break;
    } catch (const RowConflict& e) {
      // The transaction rolled back whole, the claim with it.
      if (!batch.recovery) batch.id = batch.version = 0;
      // The row there may be the copy the batch before made, whose delete runs beside this copy: a child that
      // moved from that batch's root to one of this batch's between their two reads. That batch's end decides its
      // copy (removed with its root when the root stays), so wait for its delete, write its end in this
      // transaction, and copy again; only a row still there after that is a conflict.
      if (!settled) {
        settled = true;
        if (settle(finished)) {
          spdlog::info("batch {}: {}; waiting for the delete of the batch before, whose end decides that copy",
                       batch.no, e.what());
          continue;
        }
      }
      // The batch goes again without that root.
      park_conflict(batch, e);
    } catch (const RootStays& e) {
      if (!batch.recovery) batch.id = batch.version = 0;
      if (!settled) {  // as above: the row may be the copy of the batch before, decided by its end
        settled = true;
        if (settle(finished)) continue;
      }
      leave_in_source(batch, e);
    }
  }
  fault::point("after_copy_commit");
  m_ctx.stats.t_copy += since(t0);
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    m_ctx.stats.tables[t].copied += batch.copied[t];
    m_ctx.stats.tables[t].verified += batch.verified[t];
  }
  for (Batch* f : finished) {
    f->version = f->next_version;
    account(*f);
  }
  finished.clear();
}

void Stages::park_conflict(Batch& batch, const RowConflict& e) {
  if (e.root() < 0) throw e;
  const size_t r = static_cast<size_t>(e.root());
  std::string name = name_key(m_ctx.root(), batch.root_keys[r]);
  spdlog::error("batch {}: {}; root {} stays in the source and both versions are kept (a conflict)", batch.no,
                e.what(), name);
  {
    db::Transaction tx(m_ctx.dst);
    m_ctx.registry.add_conflicts(m_ctx.dst, m_ctx.job_id, batch.id, {batch.roots[r]});
    fault::point("before_conflict_commit");
    m_ctx.hooks.before_commit();
    tx.commit();
  }
  m_ctx.stats.add_conflict(name);
  m_ctx.skip_roots.insert(batch.roots[r].hash);
  batch.remove_root(r);
  batch.prebuilt = false;
}

void Stages::leave_in_source(Batch& batch, const RootStays& e) {
  if (e.root() < 0) throw Error(e.what());
  const size_t r = static_cast<size_t>(e.root());
  std::string why = fmt::format("root {}: {}", name_key(m_ctx.root(), batch.root_keys[r]), e.what());
  if (m_ctx.stats.add_blocked(why)) {
    spdlog::warn("batch {}: {}; the root stays in the source and nothing of it is archived by this run", batch.no,
                 why);
  }
  m_ctx.skip_roots.insert(batch.roots[r].hash);
  batch.remove_root(r);
  batch.prebuilt = false;
}

void Stages::prepare_after(Batch& batch, std::vector<std::unique_ptr<Batch>>& pending,
                           const std::function<void()>& settle) {
  std::vector<Batch*> ps;
  for (auto& b : pending) ps.push_back(b.get());
  auto under_way = [&](std::vector<Batch*>& finished) {
    const size_t before = pending.size();
    settle();
    for (size_t i = before; i < pending.size(); ++i) finished.push_back(pending[i].get());
    return pending.size() > before;
  };
  try {
    prepare(batch, ps, under_way);
    pending.clear();
  } catch (...) {
    try {
      settle();
      finish_all(pending);
    } catch (const std::exception& e) {
      spdlog::error("the batches before batch {} could not be recorded as done: {}", batch.no, e.what());
    }
    throw;
  }
}

// A root left in the source because it changed after its copy loses its archived copy in the same transaction
// that ends the batch, so that no row is ever in both servers; the next run archives its current version if it
// still matches `where`.
void Stages::write_end(Batch& batch) {
  m_log.end(batch);
  if (m_ctx.mode == Mode::archive) {
    std::vector<int> stayed = batch.roots_with(RootFate::changed);
    std::vector<int> withdrawn = batch.roots_with(RootFate::withdrawn);
    std::vector<int> blocked = batch.roots_with(RootFate::blocked);
    stayed.insert(stayed.end(), withdrawn.begin(), withdrawn.end());
    stayed.insert(stayed.end(), blocked.begin(), blocked.end());
    m_writer.remove_copied_rows(batch, stayed);
    m_log.record_conflicts(batch);
  }
  if (m_ctx.mode == Mode::copy_only) m_log.mark_copied(batch);
}

void Stages::finish(std::vector<Batch*>& batches) {
  if (batches.empty()) return;
  {
    db::Transaction tx(m_ctx.dst);
    for (Batch* b : batches) write_end(*b);
    m_ctx.hooks.before_commit();
    tx.commit();
  }
  for (Batch* b : batches) {
    b->version = b->next_version;
    account(*b);
  }
  batches.clear();
}

void Stages::finish_all(std::vector<std::unique_ptr<Batch>>& batches) {
  std::vector<Batch*> ps;
  for (auto& b : batches) ps.push_back(b.get());
  finish(ps);
  batches.clear();
}

void Stages::account(Batch& batch) {
  size_t changed = batch.count(RootFate::changed);
  size_t withdrawn = batch.count(RootFate::withdrawn);
  for (size_t t = 0; t < batch.deleted.size(); ++t) m_ctx.stats.tables[t].deleted += batch.deleted[t];
  m_ctx.stats.t_delete += batch.t_delete;
  count_locks(batch);
  if (changed) {
    m_ctx.stats.roots_changed += changed;
    spdlog::warn("batch {}: {} root(s) changed in the source after they were copied and were left in the source "
                 "and their archived copy was removed (e.g. {}); the next run archives their current version",
                 batch.no, changed, join(batch.reasons, "; "));
  }
  if (withdrawn) {
    m_ctx.stats.roots_withdrawn += withdrawn;
    spdlog::warn("batch {}: {} root(s) no longer matched `where` under the delete's lock and were left in the source "
                 "(e.g. {})",
                 batch.no, withdrawn, join(batch.reasons, "; "));
  }
  for (int r : batch.roots_with(RootFate::conflict)) {
    std::string name = name_key(m_ctx.root(), batch.root_keys[static_cast<size_t>(r)]);
    spdlog::error("batch {}: root {} differs between the source and its archived copy after a crash at the delete's "
                  "commit; both versions are kept (a conflict)",
                  batch.no, name);
    m_ctx.stats.add_conflict(name);
    // No later batch of this run may take it (conflicts arise in recovery, before the source worker starts).
    m_ctx.skip_roots.insert(batch.roots[static_cast<size_t>(r)].hash);
  }
  // Counted by fate; a reason each, for the first roots of the run (a run of a million blocked roots logs ten).
  const size_t reasons = batch.blocked.size(), blocked = batch.count(RootFate::blocked);
  for (size_t i = 0; i < blocked; ++i) {
    std::string why = i < reasons ? batch.blocked[i] : "";
    if (m_ctx.stats.add_blocked(why) && !why.empty()) {
      spdlog::warn("batch {}: root left in the source (blocked): {}", batch.no, why);
    }
  }
  m_ctx.stats.roots_done += batch.count(RootFate::moved);
  m_ctx.proof->forget(batch.proof);  // its end is committed: the proof may go
  ++m_ctx.stats.batches;
  m_ctx.stats.roots += batch.roots.size();
  m_ctx.hooks.progress(m_ctx.stats, "batch done");
  fault::point("after_batch");
}

// The batch's lock window counts toward the run's (the remover sized the batches after it already).
void Stages::count_locks(const Batch& batch) {
  if (batch.t_locked <= 0) return;
  Stats& s = m_ctx.stats;
  s.t_locked += batch.t_locked;
  s.t_locked_max = std::max(s.t_locked_max, batch.t_locked);
  ++s.locked_batches;
}

void Stages::read_archived_copy(Batch& batch) const {
  batch.tables.assign(m_ctx.tables.size(), TableRows{});
  batch.fate.assign(batch.roots.size(), RootFate::moved);
  m_tree.read_roots(m_ctx.dst, Side::destination, batch, Read::plain);
  m_tree.read_children(m_ctx.dst, Side::destination, batch, Read::plain);
  // The roots the interrupted delete recorded as kept were never deleted by it: the source holds them.
  std::set<std::string> kept;
  for (const auto& enc : m_ctx.registry.stayed(m_ctx.dst, batch.id)) kept.insert(enc);
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (kept.count(batch.roots[i].encoded)) batch.leave(i, RootFate::changed, "left in the source by the interrupted delete");
  }
  batch.loaded = batch.prebuilt = true;
}

void Stages::process(Batch& batch) {
  auto t0 = std::chrono::steady_clock::now();
  if (batch.delete_committed) {
    // The interrupted delete committed: the archived copy is the archive. Only the end is left: done, and the
    // copies of the roots that delete kept in the source removed.
    read_archived_copy(batch);
    batch.t_read = since(t0);
    std::vector<Batch*> done{&batch};
    finish(done);
    return;
  }
  if (batch.unproven) {
    read_archived_copy(batch);
  } else if (!batch.loaded) {
    m_reader.read_known(batch);
  }
  batch.t_read = since(t0);
  std::vector<Batch*> none;
  if (!batch.unproven) prepare(batch, none);
  if (m_ctx.removes_from_src()) {
    m_ctx.hooks.gate("delete");
    spdlog::info("batch {} delete phase start", batch.no);
    m_ctx.hooks.progress(m_ctx.stats, "deleting");
    remove(batch);
  }
  std::vector<Batch*> done{&batch};
  finish(done);
}

}  // namespace goarchive::pipeline

#include "pipeline/restore.h"

#include <chrono>
#include <future>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/commit_proof.h"
#include "pipeline/recovery.h"
#include "pipeline/rows.h"
#include "pipeline/source_worker.h"
#include "util/error.h"
#include "util/fault.h"

namespace goarchive::pipeline {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

bool Restore::run(unsigned& batch_no) {
  if (!m_ctx.proof->available()) {
    throw Error("restore needs the source table goarchive_commits to prove which copies committed after a crash; "
                "let goarchive create it (CREATE privilege on the source database) or create it as goarchive(1) "
                "shows, with INSERT, SELECT and DELETE granted on it");
  }
  if (!recover(batch_no)) return false;
  // The archive's removal of one batch (on `src`, on the worker) runs beside the read (on `reads`) and the copy
  // back (on `dst`, its claim on `marks`) of the next; at most one removal is under way, in batch order.
  std::unique_ptr<Batch> removing;
  std::future<void> removed;
  SourceWorker worker;
  auto settle = [&]() {
    if (!removing) return;
    auto t0 = std::chrono::steady_clock::now();
    removed.get();
    m_ctx.stats.t_wait_source += since(t0);
    account(*removing);
    removing.reset();
  };
  try {
    const bool completed = run_batches(batch_no, [&](std::unique_ptr<Batch> batch) {
      settle();
      m_ctx.hooks.progress(m_ctx.stats, "deleting");
      removing = std::move(batch);
      removed = worker.submit([this, b = removing.get()] { remove_archived(*b); });
    });
    settle();
    return completed;
  } catch (...) {
    // What committed in the archive is accounted; the failure goes on (a batch not removed is the rerun's).
    try {
      settle();
    } catch (const std::exception& e) {
      spdlog::debug("the archive removal under way failed too: {}", e.what());
    }
    throw;
  }
}

bool Restore::run_batches(unsigned& batch_no, const std::function<void(std::unique_ptr<Batch>)>& remove) {
  std::optional<std::vector<std::string>> cursor;
  while (true) {
    if (!m_ctx.hooks.boundary("batch")) return false;
    m_ctx.hooks.gate("copy");
    auto batch = std::make_unique<Batch>();
    batch->no = batch_no + 1;
    auto t0 = std::chrono::steady_clock::now();
    // Only roots this job archived: not its copy-only copies, nor the ones --keep-archive left (marked copied).
    std::vector<std::string> last = m_reader.read_next(*batch, cursor ? &*cursor : nullptr, true);
    fault::point("after_read");
    if (last.empty()) return true;
    cursor = std::move(last);
    ++batch_no;
    if (!copy_batch(*batch, t0)) continue;
    remove(std::move(batch));
  }
}

// The batch's read is in; false when no root of it goes back (every one stays archived).
bool Restore::copy_batch(Batch& batch, std::chrono::steady_clock::time_point t0) {
  batch.t_read = since(t0);
  m_ctx.stats.t_select += batch.t_read;
  // A diamond row whose other parent stays archived (holds.h, read in the archive's snapshot) cannot go back
  // before that parent: its root stays archived, a normal outcome.
  std::vector<int> held = batch.roots_with(RootFate::blocked);
  for (size_t i = held.size(); i-- > 0;) {
    size_t r = static_cast<size_t>(held[i]);
    std::string why = i < batch.blocked.size() ? batch.blocked[i] : "held by a parent that stays archived";
    if (m_ctx.stats.add_blocked(why)) spdlog::warn("batch {}: root stays in the archive: {}", batch.no, why);
    ++m_ctx.stats.roots;
    batch.remove_root(r);
  }
  batch.blocked.clear();
  if (batch.roots.empty()) return false;
  copy_back(batch);
  return !batch.roots.empty();
}

bool Restore::recover(unsigned& batch_no) {
  auto counts = unfinished_work(m_ctx);
  if (counts.first + counts.second == 0) return true;
  spdlog::info("recovery start: {} root(s) of an interrupted restore", counts.first + counts.second);
  const bool adopted = adopt_unfinished(m_ctx, m_log, batch_no, [&](Batch& batch, const tracking::BatchRow&) {
    batch.proof = m_ctx.registry.proof(m_ctx.reg(), batch.id);
    if (batch.proof.empty()) {
      throw Error(fmt::format("restore batch {} of job {} has no commit proof: nothing tells whether its copy into "
                              "the source committed; compare its roots in both servers (goarchive jobs), then "
                              "clear it with goarchive jobs --clear",
                              batch.id, m_ctx.job.name));
    }
    fault::point("recovery_adopted");
    if (!m_ctx.proof->committed(batch.proof)) {
      // The copy rolled back: the rows never left the archive, and the loop restores them again.
      spdlog::info("batch {}: the interrupted copy into the source rolled back; its {} root(s) are restored again",
                   batch.no, batch.roots.size());
      batch.fate.assign(batch.roots.size(), RootFate::changed);
      db::Transaction tx(m_ctx.reg());
      m_log.end(batch);
      m_ctx.hooks.before_commit();
      tx.commit();
      return;
    }
    // The copy committed: the rows are back in the source, and the archived copy is this batch's to remove.
    spdlog::info("batch {}: the interrupted copy into the source committed; removing its archived copy", batch.no);
    batch.tables.assign(m_ctx.tables.size(), TableRows{});
    batch.fate.assign(batch.roots.size(), RootFate::moved);
    m_tree.read_roots(m_ctx.src, Side::source, batch, Read::plain);
    m_tree.read_children(m_ctx.src, Side::source, batch, Read::plain);
    batch.loaded = batch.prebuilt = true;
    batch.copied.assign(m_ctx.tables.size(), 0);
    batch.verified.assign(m_ctx.tables.size(), 0);
    remove_archived(batch);
    account(batch);
    m_ctx.stats.recovered += batch.roots.size();
  });
  if (!adopted) return false;
  spdlog::info("recovery done: {} root(s) finished", m_ctx.stats.recovered);
  return true;
}

void Restore::keep(Batch& batch, size_t root, const std::string& why, bool back) {
  std::string line = fmt::format("root {}: {}", name_key(m_ctx.root(), batch.root_keys[root]), why);
  ++m_ctx.stats.roots;
  if (back) {
    ++m_ctx.stats.roots_present;
    spdlog::info("batch {}: {}; the root stays in the archive as well", batch.no, line);
  } else {
    // Named in the log for the first few of the run, and in the summary's list (with the blocked roots).
    if (++m_ctx.stats.roots_kept <= Stats::k_blocked_logged) {
      spdlog::error("batch {}: {}; the root stays in the archive", batch.no, line);
    }
    if (m_ctx.stats.blocked.size() < Stats::k_blocked_kept) m_ctx.stats.blocked.push_back(line);
  }
  m_ctx.skip_roots.insert(batch.roots[root].hash);
  batch.remove_root(root);
  batch.prebuilt = false;
}

void Restore::copy_back(Batch& batch) {
  spdlog::info("batch {} start: {} archived root(s) to restore", batch.no, batch.roots.size());
  m_ctx.hooks.progress(m_ctx.stats, "copying");
  auto t0 = std::chrono::steady_clock::now();
  while (!batch.roots.empty()) {
    batch.fate.assign(batch.roots.size(), RootFate::moved);
    m_writer.prebuild(batch);
    batch.copied.assign(m_ctx.tables.size(), 0);
    batch.verified.assign(m_ctx.tables.size(), 0);
    try {
      db::Transaction tx(m_ctx.dst);
      batch.proof = m_ctx.proof->stamp(0);
      m_writer.copy(batch);
      m_writer.verify(batch);
      fault::point("after_verify");
      {
        // The claim and the proof are on the archive before the source commits: a rerun that finds the batch
        // unfinished reads the proof in the source, which says whether this copy committed.
        db::Connection& reg = m_ctx.marks ? *m_ctx.marks : m_ctx.reg();
        db::Transaction claim(reg);
        m_log.claim(batch, reg);
        m_ctx.registry.record_proof(reg, batch.id, batch.proof);
        m_ctx.hooks.before_commit();
        claim.commit();
      }
      fault::point("after_restore_claim");
      fault::point("before_copy_commit");
      m_ctx.hooks.before_commit();
      tx.commit();
      break;
    } catch (const SameRowThere& e) {
      batch.id = batch.version = 0;
      if (e.root() < 0) throw Error(e.what());
      keep(batch, static_cast<size_t>(e.root()), e.what(), true);
    } catch (const RootError& e) {
      batch.id = batch.version = 0;
      if (e.root() < 0) throw Error(e.what());
      keep(batch, static_cast<size_t>(e.root()), e.what(), false);
    }
  }
  if (batch.roots.empty()) return;
  fault::point("after_copy_commit");
  m_ctx.stats.t_copy += since(t0);
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    m_ctx.stats.tables[t].copied += batch.copied[t];
    m_ctx.stats.tables[t].verified += batch.verified[t];
  }
}

void Restore::remove_archived(Batch& batch) {
  spdlog::info("batch {} archive removal start", batch.no);
  m_remover.remove(batch);
}

// Every root of the batch is back in the source now. One whose archived copy the removal kept (the archive changed
// under it, or a parent there holds it) is in both servers: a person must look (exit 1).
void Restore::account(Batch& batch) {
  for (size_t t = 0; t < batch.deleted.size(); ++t) m_ctx.stats.tables[t].deleted += batch.deleted[t];
  m_ctx.stats.t_delete += batch.t_delete;
  for (size_t r = 0; r < batch.roots.size(); ++r) {
    if (!batch.stays(r)) continue;
    std::string name = name_key(m_ctx.root(), batch.root_keys[r]);
    spdlog::error("batch {}: root {} is back in the source, but its archived copy was kept ({}): it is in both "
                  "servers now",
                  batch.no, name, batch.reasons.empty() ? "the archive changed" : batch.reasons.front());
    m_ctx.stats.add_conflict(name);
  }
  m_ctx.stats.roots_done += batch.count(RootFate::moved);
  m_ctx.proof->forget(batch.proof);
  ++m_ctx.stats.batches;
  m_ctx.stats.roots += batch.roots.size();
  m_ctx.hooks.progress(m_ctx.stats, "batch done");
  fault::point("after_batch");
}

}  // namespace goarchive::pipeline

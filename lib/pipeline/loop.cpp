#include "pipeline/loop.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/source_worker.h"
#include "util/error.h"
#include "util/fault.h"

namespace goarchive::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

bool Loop::run(unsigned& batch_no) {
  // copy-only has no source side to overlap and filters roots on the destination: it runs batch by batch.
  return m_ctx.removes_from_src() ? pipelined(batch_no) : batch_by_batch(batch_no);
}

// Each batch still goes read -> copy -> verify -> mark deleting -> delete -> done, in that order. The source
// deletes run one after another on the worker, in batch order, while the main thread copies: up to two copied
// batches wait for their delete, so that the worker starts the next delete the moment one commits instead of
// waiting for the copy beside it (the two take turns being the longer). At most five batches are in memory (one
// read ahead, one copying, two deleting or waiting to, one waiting for its done, which rides in the next copy
// transaction). A delete that fails stops the ones queued behind it unrun: their batches stay copied, for the
// rerun's recovery; whatever fails, the batches deleted before it are recorded done first.
bool Loop::pipelined(unsigned& batch_no) {
  constexpr size_t k_deletes_ahead = 2;
  struct Deleting {
    std::unique_ptr<Batch> batch;
    std::future<void> done;
  };
  std::optional<std::vector<std::string>> cursor;  // touched only by read tasks, one after another
  std::unique_ptr<Batch> current, next;
  std::deque<Deleting> deleting;                // delete queued or under way, in batch order
  std::vector<std::unique_ptr<Batch>> deleted;  // delete committed, end not yet written
  std::future<void> read_done;
  auto failed = std::make_shared<std::atomic<bool>>(false);  // a delete failed: the queued ones do not run
  // Declared last: destroyed (joined) first, before the batches their tasks use. The next batch's plain read runs
  // on a thread and a source session of its own when there is one (Context::reads), beside the delete of the
  // batch before it; else on the worker, after the deletes queued before it.
  SourceWorker worker;
  std::optional<SourceWorker> reader;
  if (m_ctx.reads) reader.emplace();
  SourceWorker& reads = reader ? *reader : worker;
  auto submit_read = [&](Batch& b) {
    return reads.submit([this, &cursor, pb = &b] {
      auto t0 = Clock::now();
      // The cursor follows the keyset, not the batch: roots it skips (open conflicts) are passed over too.
      std::vector<std::string> last = m_reader.read_next(*pb, cursor ? &*cursor : nullptr, false);
      fault::point("after_read");
      pb->keyset_end = last.empty();
      if (!last.empty()) cursor = std::move(last);
      // A reader thread of its own is idle most of a batch: it builds the INSERTs and key lists too, off the
      // main thread (the copy is the longer half of a batch). On the worker, prepare builds them: the source
      // side would carry the read, the locked read and the delete.
      pb->t_read = since(t0);
      if (m_ctx.reads && !pb->roots.empty()) m_stages.prebuild(*pb);
    });
  };
  auto submit_delete = [&](std::unique_ptr<Batch> b) {
    std::future<void> done = worker.submit([this, failed, pb = b.get()] {
      if (failed->load()) throw Error(fmt::format("batch {}: not deleted, a delete before it failed", pb->no));
      spdlog::info("batch {} delete phase start", pb->no);
      try {
        m_stages.remove(*pb);
      } catch (...) {
        failed->store(true);
        throw;
      }
    });
    deleting.push_back(Deleting{std::move(b), std::move(done)});
  };
  // Moves the oldest delete to `deleted` once it committed; rethrows its failure.
  auto retire_oldest = [&]() {
    auto t0 = Clock::now();
    deleting.front().done.get();
    m_ctx.stats.t_wait_source += since(t0);
    deleted.push_back(std::move(deleting.front().batch));
    deleting.pop_front();
  };
  auto retire_committed = [&]() {
    while (!deleting.empty() &&
           deleting.front().done.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      retire_oldest();
    }
  };
  auto wait_deletes = [&]() {
    while (!deleting.empty()) retire_oldest();
  };
  auto flush = [&]() {
    wait_deletes();
    m_stages.finish_all(deleted);
  };
  // When the loop fails (a delete, a read, a copy, a gate), the batches whose delete committed get their end
  // recorded before the failure goes on (no destination transaction is open here), so that only the batches not
  // yet deleted are left for the rerun's recovery.
  auto record_deleted = [&]() {
    try {
      wait_deletes();
    } catch (const std::exception& e) {
      spdlog::debug("a queued delete did not commit: {}", e.what());  // the failure that goes on says why
    }
    try {
      m_stages.finish_all(deleted);
    } catch (const std::exception& e) {
      spdlog::error("the batches deleted before the failure could not be recorded as done: {}", e.what());
    }
  };
  try {
    if (!m_ctx.hooks.boundary("batch")) return false;
    m_ctx.hooks.gate("batch");
    current = std::make_unique<Batch>();
    submit_read(*current).get();
    while (!current->keyset_end) {
      if (current->roots.empty()) {  // every root of this page is skipped: read on
        next = std::make_unique<Batch>();
        submit_read(*next).get();
        current = std::move(next);
        continue;
      }
      current->no = ++batch_no;
      next = std::make_unique<Batch>();
      read_done = submit_read(*next);  // prefetch, beside (or behind) the deletes of the batches before
      // The end of batches deleted so far rides in this batch's copy transaction; a copy that must settle first
      // waits for every delete queued before it.
      retire_committed();
      m_stages.prepare_after(*current, deleted, wait_deletes);
      m_ctx.hooks.gate("delete");
      m_ctx.hooks.progress(m_ctx.stats, "deleting");
      retire_committed();
      while (deleting.size() >= k_deletes_ahead) retire_oldest();
      // On the worker: the source delete, beside the next batches' copy on the main thread.
      submit_delete(std::move(current));
      auto t0 = Clock::now();
      read_done.get();
      m_ctx.stats.t_wait_source += since(t0);
      current = std::move(next);
      if (!m_ctx.hooks.boundary("batch")) {
        flush();
        return false;
      }
      m_ctx.hooks.gate("batch");
    }
    flush();
    return true;
  } catch (...) {
    record_deleted();
    throw;
  }
}

// copy-only: each batch's move to done rides in the next batch's copy transaction.
bool Loop::batch_by_batch(unsigned& batch_no) {
  std::optional<std::vector<std::string>> last;
  std::vector<std::unique_ptr<Batch>> copied;  // copy committed, not yet marked done
  while (true) {
    if (!m_ctx.hooks.boundary("batch")) {
      m_stages.finish_all(copied);
      return false;
    }
    auto t0 = Clock::now();
    auto batch = std::make_unique<Batch>();
    std::vector<std::string> after = m_reader.read_next(*batch, last ? &*last : nullptr, true);
    batch->t_read = since(t0);
    if (after.empty()) break;  // no root left
    last = after;
    if (batch->roots.empty()) continue;  // every root of this range was copied before
    batch->no = ++batch_no;
    m_stages.prepare_after(*batch, copied, [] {});
    copied.push_back(std::move(batch));
  }
  m_stages.finish_all(copied);
  return true;
}

}  // namespace goarchive::pipeline

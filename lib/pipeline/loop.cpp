#include "pipeline/loop.h"

#include <chrono>
#include <future>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "pipeline/source_worker.h"
#include "util/fault.h"

namespace goarchive::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

bool Loop::run(unsigned& batch_no) {
  // copy-only has no source side to overlap and filters roots on the destination: it runs batch by batch.
  return m_ctx.deletes() ? pipelined(batch_no) : batch_by_batch(batch_no);
}

// Each batch still goes read -> copy -> verify -> mark deleting -> delete -> done, in that order; at most four
// batches are in memory (one read ahead, one copying, one deleting, one waiting for its done, which rides in
// the next copy transaction).
bool Loop::pipelined(unsigned& batch_no) {
  std::optional<std::vector<std::string>> cursor;  // touched only by read tasks, one after another
  std::unique_ptr<Batch> current, next, deleting;
  std::vector<std::unique_ptr<Batch>> deleted;  // delete committed, end not yet written
  std::future<void> read_done, delete_done;
  // Declared last: destroyed (joined) first, before the batches their tasks use. The next batch's plain read runs
  // on a thread and a source session of its own when there is one (Context::reads), beside the delete of the
  // batch before it; else on the worker, after that delete.
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
  auto wait_delete = [&]() {
    if (!deleting) return;
    auto t0 = Clock::now();
    delete_done.get();
    m_ctx.stats.t_wait_source += since(t0);
    deleted.push_back(std::move(deleting));
  };
  auto flush = [&]() {
    wait_delete();
    m_stages.finish_all(deleted);
  };
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
    read_done = submit_read(*next);  // prefetch, beside (or behind) the delete of the previous batch
    // The end of batches deleted so far rides in this batch's copy transaction.
    m_stages.prepare_after(*current, deleted, wait_delete);
    m_ctx.hooks.gate("delete");
    spdlog::info("batch {} delete phase start", current->no);
    m_ctx.hooks.progress(m_ctx.stats, "deleting");
    wait_delete();  // the previous batch's delete, which ran beside this batch's copy
    // On the worker: the source delete, beside the next batch's copy on the main thread.
    delete_done = worker.submit([this, pb = current.get()] { m_stages.remove(*pb); });
    deleting = std::move(current);
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

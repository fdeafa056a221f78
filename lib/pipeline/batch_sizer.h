#pragma once
// How many roots the next batch reads, when `lock_time` asks that a batch's source delete hold the application's
// rows for no longer than that: the delete transaction's lock window (from its first locking statement to its
// commit) grows with the batch, so the next batch is sized from the last ones' windows, between k_min_roots and
// batch_size. This part owns that arithmetic only; it never reads, locks or deletes anything, and with
// lock_time = 0 every batch has batch_size roots.
#include <atomic>
#include <cstddef>

namespace goarchive::pipeline {

class BatchSizer {
public:
  // The fewest roots a sized batch takes, whatever its window: below that a batch's fixed costs (the commit, the
  // decision on the destination) are all of it, and a smaller batch would only make the run longer.
  static constexpr size_t k_min_roots = 10;

  // `lock_time` in seconds, 0 for none.
  explicit BatchSizer(double lock_time) : m_target(lock_time) {}

  // The roots the next batch reads, at most `batch_size` (the job's now: `goarchive ctl set` may change it), which
  // the sizing after it keeps to. One thread reads batches; any thread may ask.
  size_t roots(size_t batch_size);
  // A batch of `roots` roots held its rows `locked` seconds (its delete committed); sizes the batches after it.
  // Returns the new size when it moved by a quarter or more since the last one returned (for the log), else 0.
  // One thread (the source worker) observes.
  size_t observe(size_t roots, double locked);
  // The fewest roots a batch takes under the batch_size last read with.
  size_t fewest() const;
  bool sizing() const { return m_target > 0; }

private:
  double m_target;
  std::atomic<size_t> m_limit{0};       // 0: batch_size
  std::atomic<size_t> m_batch_size{0};  // the last roots() was asked under; 0 before the first
  size_t m_reported = 0;
};

}  // namespace goarchive::pipeline

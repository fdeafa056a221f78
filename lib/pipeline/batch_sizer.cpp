#include "pipeline/batch_sizer.h"

#include <algorithm>
#include <cmath>

namespace goarchive::pipeline {

size_t BatchSizer::roots(size_t batch_size) {
  m_batch_size.store(batch_size);
  const size_t limit = m_limit.load();
  return limit == 0 ? batch_size : std::min(limit, batch_size);
}

size_t BatchSizer::fewest() const { return std::min(k_min_roots, m_batch_size.load()); }

// A window is about c + k * roots (the commit and the decision's wait, then the rows). The size that fits the
// target, roots * target / window, moves toward that fixed point; the step is the geometric mean of the size now
// and that one, so that one noisy window (a commit that waited for the disk) moves the size only halfway.
size_t BatchSizer::observe(size_t roots, double locked) {
  const size_t batch_size = m_batch_size.load();
  if (m_target <= 0 || roots == 0 || locked <= 0 || batch_size == 0) return 0;
  const size_t limit = m_limit.load();
  const size_t now = limit == 0 ? batch_size : std::min(limit, batch_size);
  // A short batch (the last of the run, or one that lost skipped roots) says little about a full one.
  if (roots * 2 < now) return 0;
  const double fits = static_cast<double>(roots) * m_target / locked;
  double next = std::sqrt(static_cast<double>(now) * fits);
  const double lowest = static_cast<double>(fewest());
  next = std::clamp(next, lowest, static_cast<double>(batch_size));
  const auto size = static_cast<size_t>(std::llround(next));
  m_limit.store(size >= batch_size ? 0 : size);
  const size_t last = m_reported == 0 ? batch_size : m_reported;
  if (size * 4 >= last * 5 || size * 4 <= last * 3) {
    m_reported = size;
    return size;
  }
  return 0;
}

}  // namespace goarchive::pipeline

// BatchSizer: the size of the next batch under `lock_time`, against a model of the delete's lock window.
#include <doctest/doctest.h>

#include "pipeline/batch_sizer.h"

using goarchive::pipeline::BatchSizer;

namespace {

// A delete transaction's lock window, seconds: a fixed part (the commit) and a part per root.
double window(size_t roots, double fixed, double per_root) { return fixed + per_root * static_cast<double>(roots); }

// Runs `batches` batches of batch_size 1000 through S, each holding its rows window(n, fixed, per_root); returns the
// size the next batch would take.
size_t settle(BatchSizer& s, int batches, double fixed, double per_root) {
  size_t n = s.roots(1000);
  for (int i = 0; i < batches; ++i) {
    s.observe(n, window(n, fixed, per_root));
    n = s.roots(1000);
  }
  return n;
}

}  // namespace

TEST_CASE("BatchSizer: lock_time 0 keeps batch_size and sizes nothing") {
  BatchSizer s(0);
  CHECK_FALSE(s.sizing());
  CHECK(s.roots(1000) == 1000);
  CHECK(s.observe(1000, 5.0) == 0);
  CHECK(s.roots(1000) == 1000);
}

TEST_CASE("BatchSizer: converges to the size whose window is lock_time") {
  BatchSizer s(0.005);
  // 3 ms of commit and 7 us a root: 1,000 roots hold their rows 10 ms; 286 roots fit in 5 ms.
  const size_t n = settle(s, 30, 0.003, 0.000007);
  CHECK(n >= 272);
  CHECK(n <= 300);
  CHECK(window(n, 0.003, 0.000007) == doctest::Approx(0.005).epsilon(0.05));
}

TEST_CASE("BatchSizer: one step moves halfway (geometric), and reports a move of a quarter or more") {
  BatchSizer s(0.005);
  CHECK(s.observe(1000, 0.020) == 0);  // nothing read yet: no batch_size to size under
  REQUIRE(s.roots(1000) == 1000);
  // 1,000 roots held 20 ms: 250 would fit; the step takes sqrt(1000 * 250) = 500.
  CHECK(s.observe(1000, 0.020) == 500);
  CHECK(s.roots(1000) == 500);
  // 500 roots held 5.4 ms: 463 fit; the step takes 481, less than a quarter from 500: not reported.
  CHECK(s.observe(500, 0.0054) == 0);
  CHECK(s.roots(1000) == 481);
}

TEST_CASE("BatchSizer: a target below the fixed part stops at k_min_roots, never at zero") {
  BatchSizer s(0.001);
  CHECK(settle(s, 40, 0.003, 0.000007) == BatchSizer::k_min_roots);
  CHECK(s.fewest() == BatchSizer::k_min_roots);
  // A batch_size under the minimum is kept as it is.
  BatchSizer small(0.001);
  REQUIRE(small.roots(5) == 5);
  small.observe(5, 0.004);
  CHECK(small.fewest() == 5);
  CHECK(small.roots(5) == 5);
}

TEST_CASE("BatchSizer: short windows grow the batches back to batch_size, and no further") {
  BatchSizer s(0.005);
  REQUIRE(s.roots(1000) == 1000);
  s.observe(1000, 0.040);
  CHECK(s.roots(1000) < 400);
  CHECK(settle(s, 30, 0.0005, 0.000001) == 1000);
}

TEST_CASE("BatchSizer: a short batch (the last of a run) does not size the next; batch_size lowered by ctl wins") {
  BatchSizer s(0.005);
  REQUIRE(s.roots(1000) == 1000);
  CHECK(s.observe(1000, 0.010) == 707);
  CHECK(s.observe(100, 0.004) == 0);  // 100 < 707 / 2
  CHECK(s.roots(1000) == 707);
  CHECK(s.roots(300) == 300);  // goarchive ctl set batch_size=300
  // Sized under the new batch_size from here: 300 roots held 6 ms, 250 fit; the step takes sqrt(300 * 250) = 274.
  CHECK(s.observe(300, 0.006) == 274);
  CHECK(s.roots(300) == 274);
}

#pragma once
// Whole-number key sets that are an unbroken run (every integer from the least to the greatest, once each), and
// the range text that matches exactly them on an integer column. Pure text and arithmetic; it never decides
// where a range is allowed (the pipeline does: never for a locked read, see remover.cpp).
#include <optional>
#include <string>
#include <vector>

namespace goarchive::sql {

// An unbroken run of whole numbers, as canonical decimal text.
struct IntegerRun {
  std::string lo, hi;
  size_t count = 0;
};

// `values` (decimal text of one integer column, any order) cut into runs of at most `max_count` values, least
// first, when together they are an unbroken run; nothing when they are not (a gap, a repeat, a value that is not
// a whole number in range of 64 bits, or no value at all).
std::optional<std::vector<IntegerRun>> integer_runs(const std::vector<std::string>& values, size_t max_count);
// `col BETWEEN lo AND hi` (alias.`col` with an alias). On an integer column it matches exactly the run's values:
// no other whole number lies between.
std::string between(const std::string& column, const IntegerRun& run, const std::string& alias = "");

}  // namespace goarchive::sql

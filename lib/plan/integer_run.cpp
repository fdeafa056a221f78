#include "plan/integer_run.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <type_traits>

#include <fmt/format.h>

#include "plan/sql.h"

namespace goarchive::sql {

namespace {

bool whole_number(const std::string& v) {
  size_t i = v.size() > 1 && v[0] == '-' ? 1 : 0;
  if (i == v.size()) return false;
  return std::all_of(v.begin() + static_cast<long>(i), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

template <typename T>
std::optional<std::vector<IntegerRun>> runs_of(const std::vector<std::string>& values, size_t max_count) {
  std::vector<T> n;
  n.reserve(values.size());
  for (const auto& v : values) {
    errno = 0;
    char* end = nullptr;
    T x;
    if constexpr (std::is_signed_v<T>) x = std::strtoll(v.c_str(), &end, 10);
    else x = std::strtoull(v.c_str(), &end, 10);
    if (errno == ERANGE || end != v.c_str() + v.size()) return std::nullopt;
    n.push_back(x);
  }
  std::sort(n.begin(), n.end());
  for (size_t i = 1; i < n.size(); ++i) {
    if (n[i] != n[i - 1] + 1) return std::nullopt;  // a gap or a repeat; n[i-1] < n[i] here, so no overflow
  }
  std::vector<IntegerRun> out;
  for (size_t i = 0; i < n.size(); i += max_count) {
    size_t last = std::min(n.size(), i + max_count) - 1;
    out.push_back(IntegerRun{fmt::format("{}", n[i]), fmt::format("{}", n[last]), last - i + 1});
  }
  return out;
}

}  // namespace

std::optional<std::vector<IntegerRun>> integer_runs(const std::vector<std::string>& values, size_t max_count) {
  if (values.empty() || max_count == 0) return std::nullopt;
  bool negative = false;
  for (const auto& v : values) {
    if (!whole_number(v)) return std::nullopt;
    negative = negative || v[0] == '-';
  }
  // A signed column never holds more than LLONG_MAX, an unsigned one never less than 0.
  return negative ? runs_of<long long>(values, max_count) : runs_of<unsigned long long>(values, max_count);
}

std::string between(const std::string& column, const IntegerRun& run, const std::string& alias) {
  std::string out = alias;
  if (!out.empty()) out += '.';
  out += ident(column);
  return fmt::format("{} BETWEEN {} AND {}", out, run.lo, run.hi);
}

}  // namespace goarchive::sql

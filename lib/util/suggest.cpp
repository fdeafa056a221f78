#include "util/suggest.h"

#include <algorithm>

#include "util/strings.h"

namespace goarchive {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::string x = ascii_lower(a), y = ascii_lower(b);
  std::vector<size_t> prev(y.size() + 1), cur(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      size_t substitute = prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[y.size()];
}

std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& candidates,
                                       size_t limit) {
  size_t max_distance = std::max<size_t>(2, word.size() / 3);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    size_t d = edit_distance(word, candidates[i]);
    if (d <= max_distance) scored.emplace_back(d, i);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  std::vector<std::string> out;
  for (const auto& [d, i] : scored) {
    if (out.size() == limit) break;
    out.push_back(candidates[i]);
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& matches, bool quoted) {
  if (matches.empty()) return "";
  auto q = [&](const std::string& s) { return quoted ? "\"" + s + "\"" : s; };
  std::string out = "did you mean " + q(matches[0]);
  for (size_t i = 1; i < matches.size(); ++i) out += (i + 1 == matches.size() ? " or " : ", ") + q(matches[i]);
  return out + "?";
}

}  // namespace goarchive

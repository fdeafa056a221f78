#pragma once
// "Did you mean ...?" for mistyped names: commands, tables.
#include <string>
#include <string_view>
#include <vector>

namespace goarchive {

// Levenshtein distance (insert, delete, substitute; bytes, ASCII case-insensitive).
size_t edit_distance(std::string_view a, std::string_view b);
// The candidates close to `word`, closest first (ties in the candidates' order): at most `limit` names whose distance
// is at most max(2, size/3) of the word. Empty when nothing is close.
std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& candidates,
                                       size_t limit = 3);
// " did you mean a?" / " did you mean a, b or c?" from close_matches, or "" when the list is empty.
std::string did_you_mean(const std::vector<std::string>& matches, bool quoted = false);

}  // namespace goarchive

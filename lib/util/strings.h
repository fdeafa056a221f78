#pragma once
// Small string helpers shared by every module.
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace goarchive {

// ASCII-only lower case (server LOWER() is Unicode-aware; see locks/names.h for why this is safe).
std::string ascii_lower(std::string_view s);
// The same column names in any order, compared as ASCII case-insensitive sets (MySQL column names).
bool same_columns(const std::vector<std::string>& a, const std::vector<std::string>& b);
// The same column names in the same order, ASCII case-insensitive (a foreign key's columns against a relation's).
bool same_names(const std::vector<std::string>& a, const std::vector<std::string>& b);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::vector<std::string> split(std::string_view s, char sep);
std::string trim(std::string_view s);
// Lower-case hex of the bytes.
std::string to_hex(std::string_view bytes);
// SHA-256 of the bytes, raw 32 bytes.
std::string sha256(std::string_view bytes);
using Digest = std::array<unsigned char, 32>;
// The same, as a value that needs no allocation.
Digest sha256_digest(std::string_view bytes);
// Parses "90", "90s", "15m", "2h", "1h30m", "1.5s" into seconds; throws ConfigError naming `what`.
double parse_duration(std::string_view text, std::string_view what);
// Formats seconds as "1h02m03s" / "4.2s".
std::string format_duration(double seconds);

}  // namespace goarchive

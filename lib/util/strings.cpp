#include "util/strings.h"

#include <set>

#include <openssl/evp.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "util/error.h"

namespace goarchive {

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

Digest sha256_digest(std::string_view bytes) {
  // One fetched implementation for the process and one context per thread: EVP_sha256() in EVP_DigestInit_ex
  // looks the algorithm up under a lock on every call, which showed in the profile of 1,000-row batches.
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!md || !ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 || EVP_DigestFinal_ex(ctx.get(), out, &len) != 1 ||
      len != 32) {
    throw std::runtime_error("OpenSSL SHA-256 failed");
  }
  Digest d;
  std::memcpy(d.data(), out, d.size());
  return d;
}

std::string sha256(std::string_view bytes) {
  Digest d = sha256_digest(bytes);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

double parse_duration(std::string_view text, std::string_view what) {
  std::string t = trim(text);
  if (t.empty()) throw ConfigError(fmt::format("{}: empty duration; write it like 90s, 15m or 2h", what));
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '.')) ++j;
    if (j == i) {
      throw ConfigError(fmt::format("{}: \"{}\" is not a duration; write it like 90s, 15m or 2h", what, t));
    }
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(t.substr(i, j - i), &used);
      if (used != j - i) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("{}: \"{}\" is not a duration; write it like 90s, 15m or 2h", what, t));
    }
    double unit = 1;
    if (j < t.size()) {
      char u = t[j];
      if (u == 's') unit = 1;
      else if (u == 'm') unit = 60;
      else if (u == 'h') unit = 3600;
      else if (u == 'd') unit = 86400;
      else throw ConfigError(fmt::format("{}: unknown unit '{}' in \"{}\"; use s, m, h or d", what, u, t));
      ++j;
    } else if (any) {
      throw ConfigError(fmt::format("{}: \"{}\" needs a unit after its last number", what, t));
    }
    total += value * unit;
    any = true;
    i = j;
  }
  if (!std::isfinite(total) || total <= 0 || total > 366.0 * 86400) {
    throw ConfigError(fmt::format("{}: \"{}\" must be more than 0 and at most 366 days", what, t));
  }
  return total;
}

std::string format_duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  auto s = static_cast<long long>(std::llround(seconds));
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60);
}

bool same_columns(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  std::set<std::string> sa, sb;
  for (const auto& x : a) sa.insert(ascii_lower(x));
  for (const auto& x : b) sb.insert(ascii_lower(x));
  return sa == sb;
}

bool same_names(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace goarchive

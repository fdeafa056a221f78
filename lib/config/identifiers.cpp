#include "config/identifiers.h"

#include <fmt/format.h>

#include "util/error.h"

namespace goarchive::config {

namespace {
size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}
}  // namespace

void check_identifier(const std::string& name, const std::string& key) {
  if (name.empty()) throw ConfigError(fmt::format("{} is empty; give the name of an existing schema, table or column", key));
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      throw ConfigError(fmt::format("{} = \"{}\" contains a control character (NUL, newline, tab, ...); MySQL names "
                                    "cannot hold it: fix the name",
                                    key, printable(name)));
    }
  }
  for (unsigned char c : name) {
    if (c >= 0xF0) {
      throw ConfigError(fmt::format("{} = \"{}\" contains a character outside the Basic Multilingual Plane (such as "
                                    "an emoji); MySQL and MariaDB names cannot hold it",
                                    key, name));
    }
  }
  if (utf8_length(name) > 64) {
    throw ConfigError(fmt::format("{} = \"{}\" is longer than 64 characters, the MySQL limit for names", key, name));
  }
  if (name.back() == ' ') {
    throw ConfigError(fmt::format("{} = \"{}\" ends with a space; MySQL names cannot: remove it", key, name));
  }
}

void check_job_name(const std::string& name, const std::string& where) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.')) {
      ok = false;
    }
  }
  if (!ok) {
    throw ConfigError(fmt::format("{}: job name \"{}\" is not allowed; use 1 to 64 letters, digits, '_', '-' or '.'",
                                  where, printable(name)));
  }
}

void check_where(const std::string& condition, const std::string& key) {
  auto refuse = [&](const std::string& why) {
    throw ConfigError(fmt::format("{} = \"{}\" is refused: {}. Write one condition, such as "
                                  "created_at < NOW() - INTERVAL 2 YEAR",
                                  key, printable(condition), why));
  };
  if (condition.find_first_not_of(" \t\r\n") == std::string::npos) refuse("it is empty (use \"1=1\" for every row)");
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < condition.size(); ++i) {
    char c = condition[i];
    char next = i + 1 < condition.size() ? condition[i + 1] : '\0';
    if (c == '\0') refuse("it contains a NUL byte");
    if (quote) {
      if (c == '\\' && quote != '`') {
        if (next == '\0') refuse("it contains a NUL byte");
        ++i;
      } else if (c == quote) {
        if (next == quote) ++i;
        else quote = 0;
      }
      continue;
    }
    switch (c) {
      case '\'': case '"': case '`': quote = c; break;
      case '(': ++depth; break;
      case ')':
        if (--depth < 0) refuse("it closes a parenthesis it did not open");
        break;
      case ';': refuse("it contains ';', which would start a second statement");
        break;
      case '#': refuse("it contains '#', which would comment out the rest of the statement");
        break;
      case '-':
        if (next == '-') refuse("it contains '--', which would comment out the rest of the statement");
        break;
      case '/':
        if (next == '*') refuse("it contains '/*', a comment");
        break;
      case '*':
        if (next == '/') refuse("it contains '*/', the end of a comment");
        break;
      default: break;
    }
  }
  if (quote) refuse(fmt::format("a {} quote is not closed", quote == '`' ? "backtick" : quote == '"' ? "double" : "single"));
  if (depth != 0) refuse("a parenthesis is not closed");
}

}  // namespace goarchive::config

// libFuzzer target: identifier and literal quoting, name checks and the `where` check (issue 7).
// The input is split into fields at each 0xFF byte (never part of UTF-8, so no interesting name is lost).
// For every field:
//  - sql::ident: starts and ends with a backtick, every backtick inside is doubled, and undoing the doubling
//    gives the field back;
//  - sql::quote: starts and ends with a single quote, no raw quote, NUL, CR, LF or ^Z inside, every backslash
//    starts a known escape, and unescaping gives the field back;
//  - check_identifier: an accepted name is 1..64 characters with no control character and no trailing space;
//  - check_job_name: an accepted name cannot close the SQL comment sql::tag puts it in;
//  - check_where: an accepted condition, put inside "WHERE (" ... ")", cannot end the parentheses early, start a
//    second statement or a comment, or leave a quote open (checked by an independent MySQL-style lexer);
//  - sql::hex_literal is '' or X'<lower-case hex>'.
// A check that throws anything but goarchive::Error, or an invariant that fails, aborts: a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/identifiers.h"
#include "plan/sql.h"
#include "util/error.h"

namespace {

[[noreturn]] void finding(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_identifiers: invariant violated: %s (field of %zu bytes)\n", what, input.size());
  std::fflush(stderr);
  std::abort();
}

void check_ident(std::string_view field) {
  std::string out = goarchive::sql::ident(field);
  if (out.size() < 2 || out.front() != '`' || out.back() != '`') finding("ident is not wrapped in backticks", field);
  std::string back;
  for (size_t i = 1; i + 1 < out.size(); ++i) {
    if (out[i] == '`') {
      if (i + 2 >= out.size() || out[i + 1] != '`') finding("ident holds a lone backtick", field);
      ++i;
    }
    back += out[i];
  }
  if (back != field) finding("ident does not round-trip", field);
  std::string q = goarchive::sql::qualified(field, field);
  if (q != out + "." + out) finding("qualified is not ident.ident", field);
}

void check_quote(std::string_view field) {
  std::string out = goarchive::sql::quote(field);
  if (out.size() < 2 || out.front() != '\'' || out.back() != '\'') finding("quote is not wrapped in quotes", field);
  std::string back;
  for (size_t i = 1; i + 1 < out.size(); ++i) {
    char c = out[i];
    if (c == '\'') finding("quote holds an unescaped single quote", field);
    if (c == '\0' || c == '\n' || c == '\r' || c == '\x1a') finding("quote holds a raw NUL, CR, LF or ^Z", field);
    if (c == '\\') {
      if (i + 2 >= out.size()) finding("quote ends with a lone backslash", field);
      char e = out[++i];
      switch (e) {
        case '0': back += '\0'; break;
        case 'n': back += '\n'; break;
        case 'r': back += '\r'; break;
        case 'Z': back += '\x1a'; break;
        case '\\': case '\'': case '"': back += e; break;
        default: finding("quote holds an unknown escape", field);
      }
      continue;
    }
    back += c;
  }
  if (back != field) finding("quote does not round-trip", field);
}

void check_hex(std::string_view field) {
  std::string out = goarchive::sql::hex_literal(field);
  if (field.empty()) {
    if (out != "''") finding("hex_literal of nothing is not ''", field);
    return;
  }
  if (out.size() != field.size() * 2 + 3 || out.compare(0, 2, "X'") != 0 || out.back() != '\'')
    finding("hex_literal has the wrong shape", field);
  for (size_t i = 2; i + 1 < out.size(); ++i) {
    char c = out[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) finding("hex_literal holds a non-hex digit", field);
  }
}

size_t utf8_chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void check_identifier(const std::string& field) {
  try {
    goarchive::config::check_identifier(field, "fuzz.name");
  } catch (const goarchive::Error&) {
    return;
  }
  if (field.empty()) finding("an empty name was accepted", field);
  if (utf8_chars(field) > 64) finding("a name longer than 64 characters was accepted", field);
  if (field.back() == ' ') finding("a name with a trailing space was accepted", field);
  for (unsigned char c : field) {
    if (c < 0x20 || c == 0x7f) finding("a name with a control character was accepted", field);
  }
}

void check_job_name(const std::string& field) {
  try {
    goarchive::config::check_job_name(field, "fuzz");
  } catch (const goarchive::Error&) {
    return;
  }
  std::string tag = goarchive::sql::tag(field, 42);
  if (tag.compare(0, 2, "/*") != 0 || tag.find("*/") != tag.size() - 2) finding("a job name escapes its comment", field);
  if (field.empty() || field.size() > 64) finding("a job name of the wrong length was accepted", field);
}

// An independent MySQL-style lexer over "(" + where + ")": the condition must stay inside the parentheses.
void check_where(const std::string& field) {
  try {
    goarchive::config::check_where(field, "fuzz.where");
  } catch (const goarchive::Error&) {
    return;
  }
  if (field.find_first_not_of(" \t\r\n") == std::string::npos) finding("an empty where was accepted", field);
  if (field.find('\0') != std::string::npos) finding("a where with NUL was accepted", field);
  std::string s = "(" + field + ")";
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (quote) {
      if (c == '\\' && quote != '`') {
        ++i;  // the backslash escapes the next byte (sql_mode without NO_BACKSLASH_ESCAPES)
      } else if (c == quote) {
        if (next == quote) ++i;
        else quote = 0;
      }
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') quote = c;
    else if (c == ';') finding("an accepted where starts a second statement", field);
    else if (c == '#') finding("an accepted where starts a # comment", field);
    else if (c == '-' && next == '-') {
      char after = i + 2 < s.size() ? s[i + 2] : ' ';
      if (static_cast<unsigned char>(after) <= ' ') finding("an accepted where starts a -- comment", field);
    } else if (c == '/' && next == '*') finding("an accepted where starts a /* comment", field);
    else if (c == '(') ++depth;
    else if (c == ')') {
      if (--depth == 0 && i + 1 != s.size()) finding("an accepted where closes goarchive's parenthesis", field);
      if (depth < 0) finding("an accepted where has unbalanced parentheses", field);
    }
  }
  if (quote) finding("an accepted where leaves a quote open", field);
  if (depth != 0) finding("an accepted where leaves a parenthesis open", field);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\xff', start);
    if (end == std::string_view::npos) end = input.size();
    std::string field(input.substr(start, end - start));
    check_ident(field);
    check_quote(field);
    check_hex(field);
    check_identifier(field);
    check_job_name(field);
    check_where(field);
    start = end + 1;
  }
  return 0;
}

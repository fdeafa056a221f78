#include "plan/sql.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "util/strings.h"

namespace goarchive::sql {

std::string ident(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out += '`';
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  out += '`';
  return out;
}

std::string qualified(std::string_view database, std::string_view table) {
  return ident(database) + "." + ident(table);
}

std::string quote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out += '\'';
  for (char c : value) {
    switch (c) {
      case '\0': out += "\\0"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      case '\x1a': out += "\\Z"; break;
      default: out += c;
    }
  }
  out += '\'';
  return out;
}

std::string hex_literal(std::string_view bytes) {
  if (bytes.empty()) return "''";
  return "X'" + to_hex(bytes) + "'";
}

std::string literal_list(const std::vector<std::string>& values, bool binary) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += binary ? hex_literal(values[i]) : quote(values[i]);
  }
  return out;
}

std::string literal(const std::optional<std::string>& value, bool binary) {
  if (!value) return "NULL";
  return binary ? hex_literal(*value) : quote(*value);
}

std::string literal(const std::optional<std::string>& value, bool binary, bool integer) {
  if (!integer || binary || !value || value->empty() || value->size() > 20) return literal(value, binary);
  const size_t digits = (*value)[0] == '-' ? 1 : 0;
  // The server's text of a whole number: digits, a '-' before any but 0, no leading zero.
  if (digits == value->size() || ((*value)[digits] == '0' && value->size() > 1)) return literal(value, binary);
  for (size_t i = digits; i < value->size(); ++i) {
    if ((*value)[i] < '0' || (*value)[i] > '9') return literal(value, binary);
  }
  return *value;
}

std::string ident_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += ident(names[i]);
  }
  return out;
}

std::string tag(std::string_view job, long long run_id) {
  if (run_id > 0) return fmt::format("/* goarchive job={} run={} */", job, run_id);
  return fmt::format("/* goarchive job={} */", job);
}

std::string keyset_after(const std::vector<std::string>& columns, const KeyLiterals& last) {
  if (last.size() != columns.size()) throw std::invalid_argument("keyset_after: one value per key column is needed");
  // a > x OR (a = x AND (b > y OR (b = y AND c > z)))
  std::string out;
  std::string close;
  for (size_t i = 0; i < columns.size(); ++i) {
    std::string col = ident(columns[i]);
    if (i + 1 == columns.size()) {
      out += col + " > " + last[i];
    } else {
      out += "(" + col + " > " + last[i] + " OR (" + col + " = " + last[i] + " AND ";
      close += "))";
    }
  }
  return "(" + out + close + ")";
}

namespace {

// The most scalar values one IN list may hold. MariaDB (10.3 and later) rewrites an IN list of
// in_predicate_conversion_threshold (default 1000) or more values, when they all have the column's type (a
// VARCHAR key, X'..' with integers), into a semi-join over a table value constructor: the key is then read from a
// temporary table instead of as index ranges, and the plan is the optimizer's to choose (measured on 10.11: 2002
// Handler_read_rnd_next for 1000 keys of a (VARCHAR, VARCHAR) key). Lists of 999 values stay range reads.
constexpr size_t k_in_list_values = 999;

// `(a = x AND b = y)`: one key of several columns.
void append_equalities(std::string& out, const std::vector<std::string>& columns, const KeyLiterals& key) {
  out += '(';
  for (size_t j = 0; j < columns.size(); ++j) {
    if (j) out += " AND ";
    out += columns[j] + " = " + key[j];
  }
  out += ')';
}

// One IN list over keys [begin, end): `a IN (..)` or `(a, b) IN ((..),(..))`. A single key of several columns is
// written as equalities: MariaDB 10.11 turns `(a, b) IN ((x, y))` into `(a, b) = (x, y)`, which a single-table
// DELETE does not range-optimize (EXPLAIN type ALL: a full scan that locks every row it reads).
void append_list(std::string& out, const std::vector<std::string>& columns, const std::vector<KeyLiterals>& keys,
                 size_t begin, size_t end) {
  if (columns.size() > 1 && end - begin == 1) {
    append_equalities(out, columns, keys[begin]);
    return;
  }
  if (columns.size() == 1) {
    out += columns[0] + " IN (";
  } else {
    out += '(';
    for (size_t j = 0; j < columns.size(); ++j) out += (j ? ", " : "") + columns[j];
    out += ") IN (";
  }
  for (size_t i = begin; i < end; ++i) {
    if (i != begin) out += ',';
    if (columns.size() == 1) {
      out += keys[i][0];
      continue;
    }
    out += '(';
    for (size_t j = 0; j < columns.size(); ++j) {
      if (j) out += ',';
      out += keys[i][j];
    }
    out += ')';
  }
  out += ')';
}

}  // namespace

// Composite keys are matched with row constructors, `(a, b) IN ((x, y), ..)`: MariaDB 10.11 and MySQL 8.0 turn them
// into one index range per key, like the OR of ANDs, but parse and match them much faster. Measured on MariaDB
// 10.11 for 1000 keys of (INT, DATE), a loaded 2-core machine, median of 5: SELECT 8.4 ms (OR of ANDs 47.7 ms,
// grouped by leading column 47.5 ms), SELECT .. FOR UPDATE 9.5 ms (32.1), DELETE 6.7 ms (44.3); every form read
// 1000 index entries and no row outside the index (Handler_read_rnd_next 0). Long lists are split into several IN
// lists of at most k_in_list_values values, OR-ed, and of near-equal length, so that no part is a single key
// (see append_list).
std::string key_in(const std::vector<std::string>& columns, const std::vector<KeyLiterals>& keys,
                   const std::string& alias) {
  if (keys.empty()) return "FALSE";
  if (columns.empty()) throw std::invalid_argument("key_in: a key needs at least one column");
  for (const auto& k : keys) {
    if (k.size() != columns.size()) throw std::invalid_argument("key_in: one value per key column is needed");
  }
  std::string prefix = alias.empty() ? "" : alias + ".";
  std::vector<std::string> quoted;
  for (const auto& c : columns) quoted.push_back(prefix + ident(c));
  size_t per_list = std::max<size_t>(1, k_in_list_values / columns.size());
  size_t lists = (keys.size() + per_list - 1) / per_list;
  size_t base = keys.size() / lists, longer = keys.size() % lists;
  size_t bytes = 16 + quoted.size() * 16;
  for (const auto& k : keys) {
    for (const auto& v : k) bytes += v.size() + 1;
    bytes += 3;
  }
  std::string out;
  out.reserve(bytes);
  if (lists > 1) out += '(';
  size_t begin = 0;
  for (size_t l = 0; l < lists; ++l) {
    size_t end = begin + base + (l < longer ? 1 : 0);
    if (l) out += " OR ";
    append_list(out, quoted, keys, begin, end);
    begin = end;
  }
  if (lists > 1) out += ')';
  return out;
}

}  // namespace goarchive::sql

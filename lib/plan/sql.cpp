#include "plan/sql.h"

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

std::string literal(const std::optional<std::string>& value, bool binary) {
  if (!value) return "NULL";
  return binary ? hex_literal(*value) : quote(*value);
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

std::string key_in(const std::vector<std::string>& columns, const std::vector<KeyLiterals>& keys,
                   const std::string& alias) {
  if (keys.empty()) return "FALSE";
  std::string prefix = alias.empty() ? "" : alias + ".";
  std::string out;
  if (columns.size() == 1) {
    out.reserve(keys.size() * 8 + 16);
    out += prefix + ident(columns[0]) + " IN (";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i) out += ',';
      out += keys[i][0];
    }
    out += ')';
    return out;
  }
  std::vector<std::string> quoted;
  for (const auto& c : columns) quoted.push_back(prefix + ident(c));
  out += '(';
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += " OR ";
    out += '(';
    for (size_t j = 0; j < columns.size(); ++j) {
      if (j) out += " AND ";
      out += quoted[j] + " = " + keys[i][j];
    }
    out += ')';
  }
  out += ')';
  return out;
}

}  // namespace goarchive::sql

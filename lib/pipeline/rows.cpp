#include "pipeline/rows.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "plan/integer_run.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

void append_u32(std::string& out, uint32_t n) {
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
}

// One value of encode_values: its 4-byte big-endian length, then its bytes.
void append_value(std::string& out, std::string_view v) {
  append_u32(out, static_cast<uint32_t>(v.size()));
  out += v;
}

// A value as a person reads it in a message: numbers bare, text quoted, binary as hex.
std::string readable(const std::optional<std::string>& v, bool binary) {
  if (!v) return "NULL";
  if (binary) return sql::hex_literal(*v);
  bool numeric = !v->empty() && v->size() < 40 &&
                 std::all_of(v->begin(), v->end(), [](char c) { return (c >= '0' && c <= '9') || c == '-' || c == '.'; });
  return numeric ? *v : sql::quote(*v);
}

}  // namespace

std::string encode_values(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx) {
  std::string out;
  for (size_t i : idx) {
    if (rows.is_null(r, i)) {
      out.append("\xff\xff\xff\xff", 4);
      continue;
    }
    append_value(out, rows.cell(r, i));
  }
  return out;
}

std::string encode_values(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) append_value(out, v);
  return out;
}

bool any_null(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx) {
  return std::any_of(idx.begin(), idx.end(), [&](size_t i) { return rows.is_null(r, i); });
}

bool same_row(const db::RowSet& a, size_t ra, const db::RowSet& b, size_t rb) {
  if (a.cols() != b.cols()) return false;
  for (size_t c = 0; c < a.cols(); ++c) {
    if (a.is_null(ra, c) != b.is_null(rb, c)) return false;
    if (!a.is_null(ra, c) && a.cell(ra, c) != b.cell(rb, c)) return false;
  }
  return true;
}

void append_row(db::RowSet& to, const db::RowSet& from, size_t r) {
  for (size_t c = 0; c < from.cols(); ++c) {
    if (from.is_null(r, c)) to.push_null();
    else to.push(from.cell(r, c));
  }
}

sql::KeyLiterals wrap(sql::KeyLiterals lit, const std::vector<std::string>& collations) {
  for (size_t k = 0; k < lit.size() && k < collations.size(); ++k) {
    if (collations[k].empty() || lit[k] == "NULL") continue;
    const std::string& c = collations[k];
    lit[k] = "CONVERT(" + lit[k] + " USING " + c.substr(0, c.find('_')) + ") COLLATE " + c;
  }
  return lit;
}

sql::KeyLiterals literals(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                          const std::vector<bool>& binary) {
  sql::KeyLiterals out;
  out.reserve(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) out.push_back(sql::literal(rows.get(r, idx[k]), binary[k]));
  return out;
}

sql::KeyLiterals literals(const std::vector<std::string>& values, const std::vector<bool>& binary) {
  sql::KeyLiterals out;
  out.reserve(values.size());
  for (size_t k = 0; k < values.size(); ++k) out.push_back(sql::literal(values[k], binary[k]));
  return out;
}

sql::KeyLiterals literals(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                          const std::vector<bool>& binary, const std::vector<bool>& integer) {
  sql::KeyLiterals out;
  out.reserve(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) out.push_back(sql::literal(rows.get(r, idx[k]), binary[k], integer[k]));
  return out;
}

sql::KeyLiterals literals(const std::vector<std::string>& values, const std::vector<bool>& binary,
                          const std::vector<bool>& integer) {
  sql::KeyLiterals out;
  out.reserve(values.size());
  for (size_t k = 0; k < values.size(); ++k) out.push_back(sql::literal(values[k], binary[k], integer[k]));
  return out;
}

std::vector<std::string> key_lists(const std::vector<std::string>& columns, const std::vector<sql::KeyLiterals>& keys,
                                   size_t max_bytes, const std::string& alias, size_t max_keys) {
  std::vector<std::string> out;
  std::vector<sql::KeyLiterals> chunk;
  size_t bytes = 0;
  auto flush = [&]() {
    if (chunk.empty()) return;
    out.push_back(sql::key_in(columns, chunk, alias));
    chunk.clear();
    bytes = 0;
  };
  for (const auto& k : keys) {
    size_t size = 8;
    for (const auto& v : k) size += v.size() + 2;
    if (!chunk.empty() && (chunk.size() >= max_keys || bytes + size > max_bytes)) flush();
    chunk.push_back(k);
    bytes += size;
  }
  flush();
  return out;
}

std::vector<sql::KeyLiterals> primary_keys(const TableMeta& m, const db::RowSet& rows,
                                           const std::vector<size_t>& which) {
  std::vector<sql::KeyLiterals> keys;
  keys.reserve(which.size());
  for (size_t r : which) keys.push_back(wrap(literals(rows, r, m.key_idx, m.key_binary, m.key_integer), m.key_wrap));
  return keys;
}

std::vector<std::string> primary_key_lists(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which,
                                           size_t max_bytes) {
  return key_lists(m.key_cols, primary_keys(m, rows, which), max_bytes);
}

std::vector<KeyRange> integer_key_ranges(const std::vector<std::string>& cols, const std::vector<size_t>& which,
                                         const KeyCell& cell, size_t max_count, std::vector<size_t>& rest,
                                         const std::string& alias) {
  std::vector<KeyRange> out;
  if (cols.empty()) {
    rest.insert(rest.end(), which.begin(), which.end());
    return out;
  }
  const size_t last = cols.size() - 1;
  // Keys grouped by every column but the last (integers compare exactly: `a = 1` matches only 1).
  std::map<std::string, std::vector<size_t>> groups;
  std::string prefix;  // encode_values of the leading columns, built in place for each key
  for (size_t i : which) {
    prefix.clear();
    for (size_t k = 0; k < last; ++k) append_value(prefix, cell(i, k));
    auto at = groups.find(prefix);
    if (at == groups.end()) at = groups.emplace(prefix, std::vector<size_t>{}).first;
    at->second.push_back(i);
  }
  const std::string dot = alias.empty() ? "" : alias + ".";
  for (const auto& [group, members] : groups) {
    std::vector<std::string> values;
    values.reserve(members.size());
    for (size_t i : members) values.emplace_back(cell(i, last));
    auto runs = sql::integer_runs(values, max_count);
    std::string head, named;
    bool whole = runs.has_value();
    for (size_t k = 0; k < last && whole; ++k) {
      auto v = sql::integer_runs({std::string(cell(members.front(), k))}, 1);  // canonical, and checked
      whole = v.has_value();
      if (!whole) break;
      head += fmt::format("{}{} = {} AND ", dot, sql::ident(cols[k]), v->front().lo);
      named += v->front().lo + ", ";
    }
    if (!whole) {
      rest.insert(rest.end(), members.begin(), members.end());
      continue;
    }
    for (const auto& run : *runs) {
      out.push_back(KeyRange{head + sql::between(cols[last], run, alias), named + run.lo, run.count});
    }
  }
  return out;
}

bool all_integer(const TableMeta& m) {
  return !m.key_idx.empty() && std::all_of(m.key_idx.begin(), m.key_idx.end(), [&](size_t i) { return m.integer[i]; });
}

namespace {

}  // namespace

std::vector<KeyRange> key_ranges(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which,
                                 size_t max_count, std::vector<size_t>& rest) {
  if (!all_integer(m)) {
    rest.insert(rest.end(), which.begin(), which.end());
    return {};
  }
  return integer_key_ranges(
      m.key_cols, which, [&](size_t r, size_t k) -> std::string_view { return rows.cell(r, m.key_idx[k]); },
      max_count, rest);
}

std::vector<KeyRange> key_ranges(const TableMeta& m, const std::vector<std::vector<std::string>>& keys,
                                 size_t max_count, std::vector<size_t>& rest) {
  std::vector<size_t> which(keys.size());
  for (size_t i = 0; i < which.size(); ++i) which[i] = i;
  if (!all_integer(m)) {
    rest.insert(rest.end(), which.begin(), which.end());
    return {};
  }
  return integer_key_ranges(
      m.key_cols, which, [&](size_t i, size_t k) -> std::string_view { return keys[i][k]; }, max_count, rest);
}

std::optional<std::string> run_range(const std::string& column, bool integer, const std::vector<std::string>& values,
                                     const std::string& alias) {
  if (!integer || values.empty()) return std::nullopt;
  std::vector<size_t> which(values.size()), rest;
  for (size_t i = 0; i < which.size(); ++i) which[i] = i;
  auto ranges = integer_key_ranges(
      {column}, which, [&](size_t i, size_t) -> std::string_view { return values[i]; }, values.size(), rest, alias);
  if (ranges.size() != 1 || !rest.empty()) return std::nullopt;
  return ranges.front().where;
}

std::string name_key(const TableMeta& m, const std::vector<std::string>& key_values) {
  std::vector<std::string> shown;
  for (size_t k = 0; k < key_values.size() && k < m.key_binary.size(); ++k) {
    shown.push_back(readable(key_values[k], m.key_binary[k]));
  }
  return m.node.table + " (" + join(m.key_cols, ", ") + ") = (" + join(shown, ", ") + ")";
}

std::string name_row(const TableMeta& m, const db::RowSet& rows, size_t r) {
  std::vector<std::string> shown;
  for (size_t k = 0; k < m.key_idx.size(); ++k) shown.push_back(readable(rows.get(r, m.key_idx[k]), m.key_binary[k]));
  return m.node.table + " (" + join(m.key_cols, ", ") + ") = (" + join(shown, ", ") + ")";
}

std::string name_columns(const std::string& table, const std::vector<std::string>& names, const db::RowSet& rows,
                         size_t r, const std::vector<size_t>& idx, const std::vector<bool>& binary) {
  std::vector<std::string> shown;
  for (size_t k = 0; k < idx.size(); ++k) shown.push_back(readable(rows.get(r, idx[k]), k < binary.size() && binary[k]));
  return table + " (" + join(names, ", ") + ") = (" + join(shown, ", ") + ")";
}

size_t statement_budget(const db::Connection& conn) {
  return std::clamp<size_t>(conn.max_allowed_packet() / 2, 32 * 1024, 8 * 1024 * 1024);
}

}  // namespace goarchive::pipeline

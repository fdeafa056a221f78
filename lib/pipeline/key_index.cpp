#include "pipeline/key_index.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "pipeline/rows.h"

namespace goarchive::pipeline {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> lowered(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(lower(n));
  return out;
}

}  // namespace

std::optional<PlannedScan> scan_in_plan(db::Connection& conn, const std::string& statement,
                                        const std::string& index) {
  db::RowSet plan = conn.query("EXPLAIN " + statement);
  size_t table = plan.cols(), type = plan.cols(), rows = plan.cols(), key = plan.cols();
  for (size_t c = 0; c < plan.names().size(); ++c) {
    if (lower(plan.names()[c]) == "table") table = c;
    if (lower(plan.names()[c]) == "type") type = c;
    if (lower(plan.names()[c]) == "rows") rows = c;
    if (lower(plan.names()[c]) == "key") key = c;
  }
  if (table == plan.cols() || type == plan.cols()) return std::nullopt;
  for (size_t r = 0; r < plan.rows(); ++r) {
    if (plan.is_null(r, table) || plan.is_null(r, type)) continue;
    const std::string name = plan.text(r, table), how = plan.text(r, type);
    if (name.rfind("<", 0) == 0) continue;  // <derived2>, <union2,3>, <subquery2>
    double estimate = rows < plan.cols() && !plan.is_null(r, rows) ? std::strtod(plan.text(r, rows).c_str(), nullptr) : 0;
    if (how == "ALL" || how == "index") return PlannedScan{fmt::format("all of {} ({})", name, how), estimate};
    if (!index.empty() && key < plan.cols()) {
      const std::string used = plan.is_null(r, key) ? "no index" : plan.text(r, key);
      if (used != index) return PlannedScan{fmt::format("{} by {} ({})", name, used, how), estimate};
    }
  }
  return std::nullopt;
}

bool holds_at_least(db::Connection& conn, const std::string& table, unsigned long rows) {
  auto n = conn.scalar(fmt::format("SELECT COUNT(*) FROM (SELECT 1 FROM {} LIMIT {}) AS n", table, rows));
  return n && std::strtoul(n->c_str(), nullptr, 10) >= rows;
}

std::string pick_index(const std::vector<IndexColumns>& indexes, const std::vector<std::string>& columns) {
  if (columns.empty()) return "";
  const std::vector<std::string> want = lowered(columns);
  for (const auto& ix : indexes) {
    if (ix.name == "PRIMARY" && lowered(ix.columns) == want) return ix.name;
  }
  for (const auto& ix : indexes) {
    if (ix.unique && lowered(ix.columns) == want) return ix.name;
  }
  const std::set<std::string> set(want.begin(), want.end());
  for (const auto& ix : indexes) {
    if (ix.columns.size() < want.size()) continue;
    std::vector<std::string> lead = lowered(ix.columns);
    lead.resize(want.size());
    if (std::set<std::string>(lead.begin(), lead.end()) == set) return ix.name;
  }
  return "";
}

std::vector<std::string> KeyIndexes::names(db::Connection& conn, const std::string& table,
                                           const std::vector<std::vector<std::string>>& column_lists) {
  std::lock_guard<std::mutex> guard(m_mutex);
  auto key = std::make_pair(static_cast<const db::Connection*>(&conn), table);
  auto it = m_tables.find(key);
  if (it == m_tables.end()) {
    // SHOW INDEX: Non_unique (1), Key_name (2), Seq_in_index (3), Column_name (4), in index order.
    db::RowSet rows = conn.query("SHOW INDEX FROM " + table);
    std::vector<IndexColumns> indexes;
    for (size_t r = 0; r < rows.rows(); ++r) {
      const std::string name = rows.text(r, 2);
      if (indexes.empty() || indexes.back().name != name) indexes.push_back(IndexColumns{name, rows.text(r, 1) == "0", {}});
      indexes.back().columns.push_back(rows.text(r, 4));
    }
    it = m_tables.emplace(key, std::move(indexes)).first;
  }
  std::vector<std::string> out;
  for (const auto& columns : column_lists) {
    std::string name = pick_index(it->second, columns);
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

bool KeyIndexes::indexed_apart(db::Connection& conn, const std::string& table, const std::vector<std::string>& key) {
  names(conn, table, {});  // reads the table's indexes once
  std::lock_guard<std::mutex> guard(m_mutex);
  const auto& indexes = m_tables[std::make_pair(static_cast<const db::Connection*>(&conn), table)];
  for (const auto& ix : indexes) {
    for (size_t k = 1; k < key.size(); ++k) {
      if (!ix.columns.empty() && lower(ix.columns[0]) == lower(key[k])) return true;
    }
  }
  return false;
}

std::string force_index(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string out = " FORCE INDEX (";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + (names[i] == "PRIMARY" ? names[i] : sql::ident(names[i]));
  return out + ")";
}

std::string KeyIndexes::hint(db::Connection& conn, const std::string& table, const std::vector<std::string>& columns) {
  return force_index(names(conn, table, {columns}));
}

std::string KeyIndexes::hint(db::Connection& conn, const std::string& table, const std::vector<std::string>& columns,
                             const std::vector<std::string>& or_columns) {
  return force_index(names(conn, table, {columns, or_columns}));
}

std::vector<std::string> KeyIndexes::joins(db::Connection& conn, const std::string& table,
                                           const std::vector<std::string>& columns,
                                           const std::vector<sql::KeyLiterals>& keys, size_t max_keys) {
  const std::string index = hint(conn, table, columns);
  return key_joins(columns, keys, table, index, statement_budget(conn), max_keys);
}

std::string joined_columns(const std::string& table, const std::vector<std::string>& columns) {
  std::string out;
  for (const auto& c : columns) out += (out.empty() ? "" : ", ") + table + "." + sql::ident(c);
  return out;
}

std::vector<std::string> key_joins(const std::vector<std::string>& columns, const std::vector<sql::KeyLiterals>& keys,
                                   const std::string& table, const std::string& hint, size_t max_bytes,
                                   size_t max_keys) {
  std::vector<std::string> out;
  if (hint.empty()) {
    // No index to join on: a lookup per key would scan the table once per key. The key list instead, in the
    // same FROM-clause shape.
    for (const auto& list : key_lists(columns, keys, max_bytes, table, max_keys)) {
      out.push_back(fmt::format("{} WHERE {}", table, list));
    }
    return out;
  }
  std::string on;
  for (size_t j = 0; j < columns.size(); ++j) {
    on += fmt::format("{}{}.{} = k.k{}", j ? " AND " : "", table, sql::ident(columns[j]), j);
  }
  const std::string tail = fmt::format(") AS k STRAIGHT_JOIN {}{} ON {}", table, hint, on);
  std::string keys_sql;
  size_t in_chunk = 0;
  auto flush = [&]() {
    if (in_chunk == 0) return;
    out.push_back("(" + keys_sql + tail);
    keys_sql.clear();
    in_chunk = 0;
  };
  for (const auto& k : keys) {
    if (k.size() != columns.size()) throw std::invalid_argument("key_joins: one value per key column is needed");
    size_t size = 18;
    for (const auto& v : k) size += v.size() + 8;
    if (in_chunk > 0 && (in_chunk >= max_keys || keys_sql.size() + size > max_bytes)) flush();
    keys_sql += in_chunk ? " UNION ALL SELECT " : "SELECT ";
    for (size_t j = 0; j < k.size(); ++j) {
      keys_sql += (j ? ", " : "") + k[j];
      // The first SELECT names the derived table's columns.
      if (in_chunk == 0) keys_sql += fmt::format(" AS k{}", j);
    }
    ++in_chunk;
  }
  flush();
  return out;
}

}  // namespace goarchive::pipeline

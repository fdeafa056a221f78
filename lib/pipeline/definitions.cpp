#include "pipeline/definitions.h"

#include <fmt/format.h>

#include "plan/sql.h"

namespace goarchive::pipeline {

Definitions read_definitions(db::Connection& conn, const std::string& database, const std::vector<TableMeta>& tables) {
  std::string names;
  for (const auto& t : tables) {
    if (!names.empty()) names += ',';
    names += sql::quote(t.node.table);
  }
  db::RowSet r = conn.query(fmt::format(
      "SELECT TABLE_NAME, GROUP_CONCAT(CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
      "IFNULL(COLLATION_NAME, ''), IFNULL(GENERATION_EXPRESSION, '')) ORDER BY ORDINAL_POSITION SEPARATOR '|') "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME IN ({}) GROUP BY TABLE_NAME",
      sql::quote(database), names));
  Definitions out;
  for (size_t i = 0; i < r.rows(); ++i) out[r.cell(i, 0)] = r.cell(i, 1);
  return out;
}

std::optional<std::string> definition_change(const Definitions& then, const Definitions& now, const char* side,
                                             const std::string& database) {
  for (const auto& [table, def] : then) {
    auto it = now.find(table);
    if (it == now.end() || it->second != def) {
      return fmt::format("the definition of {} table {}.{} changed during the run (a column added, dropped or "
                         "retyped); the run stopped cleanly at a batch boundary. Make the source and destination "
                         "tables match again (validate checks them), then rerun the job",
                         side, database, table);
    }
  }
  return std::nullopt;
}

std::optional<std::string> DefinitionGuard::check(db::Connection& conn, const std::vector<TableMeta>& tables) {
  auto why = definition_change(m_at_start, read_definitions(conn, m_database, tables), "source", m_database);
  if (why) {
    std::lock_guard<std::mutex> g(m_mutex);
    if (!m_found) m_found = why;
  }
  return why;
}

std::optional<std::string> DefinitionGuard::found() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_found;
}

}  // namespace goarchive::pipeline

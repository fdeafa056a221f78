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
  for (size_t i = 0; i < r.rows(); ++i) out[r.text(i, 0)] = r.text(i, 1);
  return out;
}

Probes read_probes(db::Connection& conn, const std::string& database, const std::vector<TableMeta>& tables) {
  Probes out;
  for (const auto& t : tables) {
    // A table gone has no text: information_schema then says so in the message.
    try {
      db::RowSet r = conn.query("SHOW CREATE TABLE " + sql::qualified(database, t.node.table));
      out[t.node.table] = r.rows() == 1 && r.cols() >= 2 ? probe_text(r.text(0, 1)) : std::string();
    } catch (const db::DbError& e) {
      if (e.code() != 1146) throw;  // ER_NO_SUCH_TABLE
      out[t.node.table] = std::string();
    }
  }
  return out;
}

std::string probe_text(std::string create) {
  // The table options are on the last line that starts with ')': an identifier, comment or default printed
  // before it cannot come after it. Nothing is cut when the counter is not there (a probe that then changes
  // with every insert only sends each check to information_schema).
  const size_t options = create.rfind("\n)");
  if (options == std::string::npos) return create;
  static constexpr std::string_view counter = " AUTO_INCREMENT=";
  const size_t at = create.find(counter, options);
  if (at == std::string::npos) return create;
  size_t end = at + counter.size();
  while (end < create.size() && create[end] >= '0' && create[end] <= '9') ++end;
  if (end == at + counter.size() || (end < create.size() && create[end] != ' ' && create[end] != '\n')) return create;
  create.erase(at, end - at);
  return create;
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
  Probes before = read_probes(conn, m_database, tables);
  {
    std::lock_guard<std::mutex> g(m_mutex);
    if (!m_known.empty() && before == m_known) return std::nullopt;
  }
  if (auto why = definition_change(m_at_start, read_definitions(conn, m_database, tables), m_side, m_database)) {
    std::lock_guard<std::mutex> g(m_mutex);
    if (!m_found) m_found = why;
    return why;
  }
  // Learnt only when the probes read the same before and after information_schema's answer, so that these texts
  // are of the definitions just found unchanged. In a delete transaction no DDL can come between them (its
  // locked reads hold the metadata locks); at a boundary only a change and its reversal within this one check
  // could, and there the copy's verification, not this check, protects the rows.
  Probes after = read_probes(conn, m_database, tables);
  if (after == before) {
    std::lock_guard<std::mutex> g(m_mutex);
    m_known = std::move(after);
  }
  return std::nullopt;
}

std::optional<std::string> DefinitionGuard::found() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_found;
}

}  // namespace goarchive::pipeline

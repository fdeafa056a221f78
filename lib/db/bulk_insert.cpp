// Connection's bulk INSERT: MariaDB's array binding (COM_STMT_BULK_EXECUTE). One prepared INSERT runs for many
// rows in one round trip, each value sent as its length and bytes, so that neither side builds or parses SQL or
// LOAD DATA text. It owns the connection's prepared statements; it never runs anything but the INSERT it is given.
#include <errmsg.h>
#include <mysql.h>

#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "db/connection.h"

namespace goarchive::db {

bool Connection::bulk_supported() const {
  if (!m_mysql || !m_info.dialect.bulk_insert()) return false;
  unsigned long caps = 0, extended = 0;
  if (mariadb_get_infov(m_mysql, MARIADB_CONNECTION_SERVER_CAPABILITIES, &caps) != 0) return false;
  if (mariadb_get_infov(m_mysql, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &extended) != 0) return false;
  // CLIENT_MYSQL set: a MySQL server, which has no bulk command.
  return (caps & CLIENT_MYSQL) == 0 && (extended & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0;
}

void Connection::fail_statement(MYSQL_STMT* stmt, std::string_view what) {
  unsigned int code = mysql_stmt_errno(stmt);
  std::string state = mysql_stmt_sqlstate(stmt);
  std::string msg = mysql_stmt_error(stmt);
  // A statement that failed may be left mid-protocol: it is closed, and the next call prepares it again.
  for (auto it = m_statements.begin(); it != m_statements.end(); ++it) {
    if (it->second == stmt) {
      m_statements.erase(it);
      break;
    }
  }
  mysql_stmt_close(stmt);
  if (is_connection_lost(code, state)) m_in_transaction = false;
  throw DbError(code, state, label(), m_options.purpose, fmt::format("{}: {}", what, msg));
}

void Connection::close_statements() noexcept {
  for (auto& [sql, stmt] : m_statements) mysql_stmt_close(stmt);
  m_statements.clear();
}

Connection::BulkResult Connection::bulk_insert(const std::string& sql, const RowSet& rows,
                                               const std::vector<size_t>& which, const std::vector<bool>& binary) {
  if (!m_mysql) throw DbError(2006, "HY000", label(), m_options.purpose, "connection is closed");
  const size_t cols = rows.cols();
  if (which.empty()) return {};
  if (binary.size() != cols) throw Error("bulk_insert: one binary flag per column is needed");
  const std::string text = m_tag.empty() ? sql : m_tag + " " + sql;
  MYSQL_STMT* stmt = nullptr;
  if (auto it = m_statements.find(text); it != m_statements.end()) {
    stmt = it->second;
  } else {
    stmt = mysql_stmt_init(m_mysql);
    if (!stmt) fail("preparing a bulk INSERT failed");
    m_statements.emplace(text, stmt);
    if (mysql_stmt_prepare(stmt, text.data(), text.size()) != 0) fail_statement(stmt, "preparing a bulk INSERT failed");
    if (mysql_stmt_param_count(stmt) != cols) {
      m_statements.erase(text);
      mysql_stmt_close(stmt);
      throw Error(fmt::format("bulk_insert: the statement has not one placeholder per column ({}): {}", cols, sql));
    }
  }
  if (spdlog::should_log(spdlog::level::trace)) {
    spdlog::trace("[{}] {} (bulk, {} rows)", m_options.purpose, text, which.size());
  }
  // Column-wise arrays: per column, a pointer, a length and an indicator per row, all into the RowSet's buffer.
  const size_t n = which.size();
  std::vector<const char*> data(cols * n);
  std::vector<unsigned long> lengths(cols * n);
  std::vector<char> indicators(cols * n);
  for (size_t c = 0; c < cols; ++c) {
    for (size_t i = 0; i < n; ++i) {
      const size_t at = c * n + i;
      if (rows.is_null(which[i], c)) {
        data[at] = "";
        lengths[at] = 0;
        indicators[at] = STMT_INDICATOR_NULL;
      } else {
        std::string_view v = rows.cell(which[i], c);
        data[at] = v.data();
        lengths[at] = static_cast<unsigned long>(v.size());
        indicators[at] = STMT_INDICATOR_NONE;
      }
    }
  }
  std::vector<MYSQL_BIND> bind(cols);
  std::memset(bind.data(), 0, sizeof(MYSQL_BIND) * cols);
  for (size_t c = 0; c < cols; ++c) {
    // A binary string goes in as bytes; text in the connection's character set (utf8mb4), converted to the
    // column's as a literal would be.
    bind[c].buffer_type = binary[c] ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
    bind[c].buffer = const_cast<char**>(data.data() + c * n);
    bind[c].length = lengths.data() + c * n;
    bind[c].u.indicator = indicators.data() + c * n;
  }
  unsigned int size = static_cast<unsigned int>(n);
  if (mysql_stmt_attr_set(stmt, STMT_ATTR_ARRAY_SIZE, &size) != 0) fail_statement(stmt, "a bulk INSERT failed");
  if (mysql_stmt_bind_param(stmt, bind.data()) != 0) fail_statement(stmt, "a bulk INSERT failed");
  if (mysql_stmt_execute(stmt) != 0) fail_statement(stmt, "a bulk INSERT failed");
  BulkResult out;
  my_ulonglong affected = mysql_stmt_affected_rows(stmt);
  out.rows = affected == static_cast<my_ulonglong>(-1) ? 0 : affected;
  out.warnings = static_cast<unsigned>(mysql_stmt_warning_count(stmt));
  return out;
}

}  // namespace goarchive::db

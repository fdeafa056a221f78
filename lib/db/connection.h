#pragma once
// RAII over Connector/C: with bulk_insert.cpp, the only code in goarchive that includes <mysql.h>.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "db/dialect.h"
#include "db/error.h"

struct st_mysql;
struct st_mysql_stmt;

namespace goarchive::db {

// Rows of a result, stored flat in one buffer: cell(i, j) is row i, column j; NULL is distinct from "". A view
// from cell() lives as long as the RowSet and until the next push.
class RowSet {
public:
  size_t rows() const { return m_cols ? m_null.size() / m_cols : 0; }
  size_t cols() const { return m_cols; }
  bool empty() const { return m_null.empty(); }
  bool is_null(size_t row, size_t col) const { return m_null[row * m_cols + col] != 0; }
  std::string_view cell(size_t row, size_t col) const {
    const size_t i = row * m_cols + col;
    const size_t begin = i ? m_end[i - 1] : 0;
    return std::string_view(m_data).substr(begin, m_end[i] - begin);
  }
  // The cell as an owned string ("" for NULL).
  std::string text(size_t row, size_t col) const { return std::string(cell(row, col)); }
  std::optional<std::string> get(size_t row, size_t col) const {
    if (is_null(row, col)) return std::nullopt;
    return text(row, col);
  }
  const std::vector<std::string>& names() const { return m_names; }

  // Building (used by Connection and by tests).
  void set_columns(std::vector<std::string> names) {
    m_names = std::move(names);
    m_cols = m_names.size();
  }
  // Room for `cells` more cells of `bytes` in all.
  void reserve(size_t cells, size_t bytes) {
    m_null.reserve(m_null.size() + cells);
    m_end.reserve(m_end.size() + cells);
    m_data.reserve(m_data.size() + bytes);
  }
  void push(const char* data, size_t len) {
    m_null.push_back(data == nullptr);
    if (data) m_data.append(data, len);
    m_end.push_back(m_data.size());
  }
  void push_null() { push(nullptr, 0); }
  void push(std::string_view v) { push(v.data(), v.size()); }

private:
  size_t m_cols = 0;
  std::vector<std::string> m_names;
  std::string m_data;          // every cell's bytes, one after another
  std::vector<size_t> m_end;   // per cell: where its bytes end in m_data
  std::vector<uint8_t> m_null;
};

// Every session's sql_mode: strict inserts (a copy that would change a value fails instead), and 0 kept as a key
// value rather than becoming the next AUTO_INCREMENT. A copy whose value strict mode refuses (a stored value
// another sql_mode let in) is retried under k_copy_sql_mode.
inline constexpr const char* k_session_sql_mode = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION";
// What a copy retried for such a value runs under: whatever the source holds goes in as it is (zero and invalid
// dates, an ENUM's '' member); the copy is then compared byte for byte.
inline constexpr const char* k_copy_sql_mode = "NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION,ALLOW_INVALID_DATES";

// Pure: what is wrong with a session's character_set_client, _connection, _results, collation_connection,
// time_zone and sql_mode (in that order) for an exact copy, as "has X = V (not W)"; "" when nothing is.
std::string session_problem(const std::vector<std::string>& values);

struct ServerInfo {
  std::string version;      // SELECT VERSION()
  unsigned long long connection_id = 0;
  Dialect dialect;          // every MariaDB / MySQL difference: ask it, never the version
};

// Connection purpose, shown in errors and in the processlist through the statement tag.
struct ConnectOptions {
  std::string purpose;           // "source data", "destination lock", ...
  std::optional<double> read_timeout;  // overrides the server config's
};

class Connection {
public:
  // Connects over utf8mb4, without reconnect, with connect/read/write timeouts and the TLS mode enforced.
  Connection(const config::ServerConfig& server, ConnectOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prefix put before every statement, e.g. "/* goarchive job=x run=7 */".
  void set_tag(std::string tag) { m_tag = std::move(tag); }
  const std::string& tag() const { return m_tag; }

  uint64_t execute(std::string_view sql);  // returns affected rows
  RowSet query(std::string_view sql);
  // Streams a large result row by row without buffering it (mysql_use_result).
  void stream(std::string_view sql, const std::function<void(const char* const* cells, const unsigned long* lengths,
                                                             size_t cols)>& on_row);
  std::optional<std::string> scalar(std::string_view sql);  // first cell of the first row, nullopt for NULL/no row
  // Runs `sql`, a LOAD DATA LOCAL INFILE statement, serving `data` as the file from memory: the client never
  // opens a local file (a file the server asks for at any other time is refused). Returns the rows inserted.
  uint64_t load_data_local(std::string_view sql, std::string_view data);
  // Warnings of the last statement (no round trip).
  unsigned int warning_count() const;
  // MariaDB's array binding (COM_STMT_BULK_EXECUTE, MariaDB 10.2.6 and later, never MySQL): the server takes it.
  bool bulk_supported() const;
  struct BulkResult {
    uint64_t rows = 0;      // inserted
    unsigned warnings = 0;  // of the statement
  };
  // Runs `sql`, an INSERT with one placeholder per column of `rows`, for rows `which` in one round trip, every
  // value sent as its bytes (a binary string where binary[c]) with no SQL text to build or parse. The prepared
  // statement is kept for the next call with the same text; one that failed is closed.
  BulkResult bulk_insert(const std::string& sql, const RowSet& rows, const std::vector<size_t>& which,
                         const std::vector<bool>& binary);
  // The in-memory file of the LOAD DATA LOCAL under way; data == nullptr: none (the server's request fails).
  struct Infile {
    const char* data = nullptr;
    size_t size = 0, pos = 0;
  };

  void begin(bool read_only = false, bool consistent_snapshot = false);
  void commit();
  void rollback() noexcept;
  bool in_transaction() const { return m_in_transaction; }

  unsigned long long last_insert_id() const;  // of the last INSERT on this session (no round trip)
  const ServerInfo& info() const { return m_info; }
  // What this server does where MariaDB and MySQL differ (db/dialect.h).
  const Dialect& dialect() const { return m_info.dialect; }
  const config::ServerConfig& server() const { return m_server; }
  std::string label() const;  // "source 127.0.0.1:3306"
  bool tls_active() const;
  uint64_t max_allowed_packet() const { return m_max_allowed_packet; }

private:
  [[noreturn]] void fail(std::string_view what);
  [[noreturn]] void fail_statement(st_mysql_stmt* stmt, std::string_view what);
  void close_statements() noexcept;
  // mysql_init and mysql_real_connect with every option (TLS ones unless `plaintext`); false when the connect
  // failed (the handle, kept for its error, is the caller's to close).
  bool connect(bool plaintext);
  void finish_connect();  // TLS check and session settings after mysql_real_connect
  void run(std::string_view sql);

  st_mysql* m_mysql = nullptr;
  config::ServerConfig m_server;
  ConnectOptions m_options;
  std::string m_tag;
  std::string m_buffer;
  ServerInfo m_info;
  uint64_t m_max_allowed_packet = 16 * 1024 * 1024;
  bool m_in_transaction = false;
  Infile m_infile;
  std::map<std::string, st_mysql_stmt*> m_statements;  // bulk_insert's prepared statements, by text
};

// Rolls back on scope exit unless committed.
class Transaction {
public:
  explicit Transaction(Connection& conn, bool read_only = false, bool consistent_snapshot = false) : m_conn(conn) {
    m_conn.begin(read_only, consistent_snapshot);
  }
  ~Transaction() {
    if (m_conn.in_transaction()) m_conn.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() { m_conn.commit(); }

private:
  Connection& m_conn;
};

}  // namespace goarchive::db

#include "db/dialect.h"

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace goarchive::db {

namespace {

constexpr const char* k_portable_var = "GOARCHIVE_TEST_PORTABLE";

// "10.11.19" -> 101119; "8.0.40" -> 80040; 0 when the text starts with no version.
unsigned long parse_number(const std::string& version) {
  unsigned long parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int p = 0; p < 3; ++p) {
    size_t start = i;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
      parts[p] = parts[p] * 10 + static_cast<unsigned long>(version[i] - '0');
      ++i;
    }
    if (i == start) return p == 0 ? 0 : parts[0] * 10000 + parts[1] * 100 + parts[2];
    if (p < 2 && (i >= version.size() || version[i] != '.')) return parts[0] * 10000 + parts[1] * 100 + parts[2];
    if (p < 2) ++i;
  }
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

}  // namespace

Dialect Dialect::from_server(const std::string& version, unsigned long number, bool portable) {
  Dialect d;
  d.m_version = version;
  // A MariaDB server's handshake version is "5.5.5-10.11.19-MariaDB..." for old replication clients; VERSION()
  // and Connector/C's server info say "10.11.19-MariaDB-0+deb12u1".
  std::string text = version.rfind("5.5.5-", 0) == 0 ? version.substr(6) : version;
  d.m_flavor = text.find("MariaDB") != std::string::npos ? Flavor::mariadb : Flavor::mysql;
  d.m_number = number != 0 ? number : parse_number(text);
  // Percona Server's VERSION() carries its build after the upstream version: "8.0.39-30", "8.4.3-3"; Oracle's
  // says "8.0.40", "8.0.40-log", "8.0.40-debug".
  if (d.m_flavor == Flavor::mysql) {
    auto dash = text.find('-');
    d.m_percona = dash != std::string::npos && dash + 1 < text.size() &&
                  std::isdigit(static_cast<unsigned char>(text[dash + 1]));
  }
  d.m_portable = portable;
  return d;
}

Dialect Dialect::connected(const std::string& version, unsigned long number) {
  return from_server(version, number, portable_switch());
}

std::string Dialect::describe() const {
  unsigned long n = m_number;
  std::string name = mariadb() ? "MariaDB" : percona() ? "Percona Server" : "MySQL";
  std::string shown = m_version;
  if (mariadb()) {
    shown = fmt::format("{}.{}.{}", n / 10000, n / 100 % 100, n % 100);
  } else if (auto dash = shown.find('-'); dash != std::string::npos && !percona()) {
    shown = shown.substr(0, dash);
  }
  return name + " " + shown + (m_portable ? " (portable path: MySQL's choices where MariaDB runs them)" : "");
}

bool Dialect::delete_returning() const { return mariadb() && !m_portable && m_number >= 100005; }

PartitionDetach Dialect::partition_detach() const {
  return mariadb() && !m_portable && m_number >= 100700 ? PartitionDetach::convert : PartitionDetach::exchange;
}

bool Dialect::bulk_insert() const { return mariadb() && !m_portable && m_number >= 100206; }

std::string Dialect::time_limited(const std::string& select, unsigned ms) const {
  if (mariadb() && !m_portable) {
    // max_statement_time is in seconds (fractions allowed).
    return fmt::format("SET STATEMENT max_statement_time={} FOR {}", ms % 1000 == 0 ? fmt::format("{}", ms / 1000)
                                                                                     : fmt::format("{:.3f}", ms / 1000.0),
                       select);
  }
  // The hint goes right after the SELECT keyword.
  if (select.rfind("SELECT ", 0) != 0) return select;
  return fmt::format("SELECT /*+ MAX_EXECUTION_TIME({}) */ {}", ms, select.substr(7));
}

std::string Dialect::replica_status_sql() const {
  if (mariadb()) return m_portable ? "SHOW REPLICA STATUS" : "SHOW ALL SLAVES STATUS";
  return m_number >= 80022 ? "SHOW REPLICA STATUS" : "SHOW SLAVE STATUS";
}

std::string Dialect::replica_status_fallback_sql() const {
  // A server that reports 8.0.22+ but refuses SHOW REPLICA STATUS (a fork, a proxy): the older statement.
  return !mariadb() && m_number >= 80022 && m_number < 80400 ? "SHOW SLAVE STATUS" : "";
}

std::string Dialect::read_only_sql() const {
  // MariaDB has no super_read_only (error 1193).
  return mariadb() ? "SELECT @@GLOBAL.read_only, 0" : "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only";
}

bool Dialect::replica_hint_from_status_variables() const { return mariadb() && !m_portable; }

const std::vector<const char*>& Dialect::status_column(StatusColumn which) {
  static const std::vector<const char*> channel = {"Connection_name", "Channel_Name"};
  static const std::vector<const char*> lag = {"Seconds_Behind_Master", "Seconds_Behind_Source"};
  static const std::vector<const char*> io = {"Slave_IO_Running", "Replica_IO_Running"};
  static const std::vector<const char*> sql = {"Slave_SQL_Running", "Replica_SQL_Running"};
  static const std::vector<const char*> host = {"Master_Host", "Source_Host"};
  static const std::vector<const char*> port = {"Master_Port", "Source_Port"};
  switch (which) {
    case StatusColumn::channel: return channel;
    case StatusColumn::lag: return lag;
    case StatusColumn::io_running: return io;
    case StatusColumn::sql_running: return sql;
    case StatusColumn::source_host: return host;
    case StatusColumn::source_port: return port;
  }
  return channel;
}

std::string Dialect::identity_sql() const {
  return mariadb() ? "SELECT @@server_id, @@gtid_domain_id, @@gtid_binlog_state, @@gtid_slave_pos, @@log_bin"
                   : "SELECT @@server_id, @@server_uuid, @@gtid_mode, @@gtid_executed";
}

bool Dialect::column_invisible(const std::string& extra) {
  return ascii_lower(extra).find("invisible") != std::string::npos;
}

bool Dialect::column_generated(const std::string& extra) {
  // Not just "generated": MySQL marks `DEFAULT CURRENT_TIMESTAMP` columns "DEFAULT_GENERATED", and those hold
  // data that is copied.
  std::string l = ascii_lower(extra);
  return l.find("virtual generated") != std::string::npos || l.find("stored generated") != std::string::npos ||
         l.find("persistent generated") != std::string::npos;
}

bool Dialect::column_gipk(const std::string& name, const std::string& extra) {
  std::string l = ascii_lower(extra);
  return ascii_lower(name) == "my_row_id" && l.find("auto_increment") != std::string::npos &&
         l.find("invisible") != std::string::npos;
}

std::string Dialect::json_storage_difference(const std::string& source_type, const std::string& destination_type) {
  const std::string s = ascii_lower(source_type), d = ascii_lower(destination_type);
  if (s == d) return "";
  if (d == "json" && s == "longtext") {
    return "MySQL's binary JSON would store the source's JSON text (MariaDB keeps it as written) in its own "
           "normalized form (spacing, key order, duplicate keys, number forms), so its copy could not be verified "
           "byte for byte; make the archive column LONGTEXT as the source's (goarchive schema creates it so, with "
           "its json_valid CHECK)";
  }
  if (s == "json" && d != "json") {
    return "the source's JSON is MySQL's binary JSON, which only a MySQL json column stores as the source does; "
           "archive it into a MySQL server, in a json column (goarchive schema creates it so there)";
  }
  return "";
}

std::vector<std::string> Dialect::differences() const {
  std::vector<std::string> out;
  out.push_back(delete_returning()
                    ? "deletes: DELETE ... RETURNING, one pass per batch (MySQL: a locked re-read, then an exact-key "
                      "delete)"
                    : "deletes: a locked re-read, then an exact-key delete (no DELETE ... RETURNING; MariaDB's "
                      "one-pass delete is not taken)");
  out.push_back(partition_detach() == PartitionDetach::convert
                    ? "partitions: CONVERT PARTITION ... TO TABLE (MySQL: EXCHANGE PARTITION into an empty table)"
                    : "partitions: EXCHANGE PARTITION into an empty table (no CONVERT PARTITION)");
  out.push_back(bulk_insert() ? "copies: array-bound bulk INSERT (MySQL: LOAD DATA LOCAL, else multi-row INSERT)"
                              : "copies: LOAD DATA LOCAL, else multi-row INSERT (no array-bound bulk INSERT)");
  out.push_back(fmt::format("replica status: {} ({}); lag from {}", replica_status_sql(),
                            replica_status_sql() == "SHOW ALL SLAVES STATUS" ? "every named connection"
                                                                             : "every channel",
                            mariadb() ? "Seconds_Behind_Master" : "Seconds_Behind_Source"));
  out.push_back(mariadb() ? "GTID: domain-server-sequence (@@gtid_binlog_state, @@gtid_slave_pos); one source is "
                            "found by server_id and domain"
                          : "GTID: uuid[:tag]:intervals (@@gtid_executed); one source is found by @@server_uuid");
  out.push_back(mariadb() ? "named locks: names up to 192 bytes (error 1059), user-lock deadlock 1213"
                          : "named locks: names up to 64 characters (error 3057), user-lock deadlock 3058, idle "
                            "disconnect 4031");
  if (!mariadb()) {
    out.push_back("keys: sql_require_primary_key refuses a table without a primary key (3750)" +
                  std::string(generates_invisible_primary_key()
                                  ? "; a generated invisible primary key (my_row_id) is a key, copied like any column"
                                  : ""));
  }
  out.push_back(json_binary() ? "JSON: stored binary, read back in MySQL's normalized text; a MariaDB source's JSON "
                                "(LONGTEXT) is archived into LONGTEXT byte for byte, never into a json column (no "
                                "canonical comparison)"
                              : "JSON: LONGTEXT with a json_valid CHECK, kept as written and archived byte for byte "
                                "(a MySQL json archive column would rewrite it: preflight refuses one)");
  return out;
}

bool portable_switch() {
#ifdef GOARCHIVE_FAULT_HOOKS
  const char* v = std::getenv(k_portable_var);
  return v && std::string(v) == "1";
#else
  return false;
#endif
}

void check_portable_environment() {
  const char* v = std::getenv(k_portable_var);
  if (!v || !*v) return;
  std::string text = v;
#ifndef GOARCHIVE_FAULT_HOOKS
  throw ConfigError(std::string(k_portable_var) + " is set, but this build has no test hooks (a Debug build, or "
                                                  "-DGOARCHIVE_FAULT_HOOKS=ON, has them); unset it");
#else
  if (text != "0" && text != "1") throw ConfigError(std::string(k_portable_var) + " must be 0 or 1, not " + text);
#endif
}

}  // namespace goarchive::db

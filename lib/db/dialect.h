#pragma once
// The one place that knows how MariaDB and MySQL (Oracle's, Percona Server) differ: a value built from what a
// server reports when a session connects (VERSION() and the version number), asked by every module for the
// statement, path or error rule to use. Nothing else tests a version string or a flavour. It never runs SQL and
// never connects; it is pure, so every answer is unit-tested on recorded server output.
//
// Two notions are kept apart: what the server IS (flavor(), mariadb(): which variables and GTID format it has,
// what the registry records) and which CHOICE to take where both servers could run either (the delete path,
// the replica-status statement, ...). The test-only portable switch (portable_switch()) makes a MariaDB session
// take MySQL's choices wherever MariaDB can run them; it never changes what the server is.
#include <string>
#include <vector>

namespace goarchive::db {

enum class Flavor { mariadb, mysql };

// How a partition leaves its table: MariaDB 10.7+ `ALTER TABLE .. CONVERT PARTITION p TO TABLE t`, MySQL
// `ALTER TABLE .. EXCHANGE PARTITION p WITH TABLE t` into a table created empty beforehand (then the partition
// is dropped). MariaDB before 10.7 has only EXCHANGE.
enum class PartitionDetach { convert, exchange };

class Dialect {
public:
  Dialect() = default;
  // Pure: the dialect of a server whose VERSION() is `version` and whose client-library version number is
  // `number` (major*10000 + minor*100 + patch; 0: parsed from `version`), with the portable switch `portable`.
  static Dialect from_server(const std::string& version, unsigned long number, bool portable);
  // What the session's server would be under the environment's portable switch (see portable_switch()).
  static Dialect connected(const std::string& version, unsigned long number);

  // ---- what the server is
  Flavor flavor() const { return m_flavor; }
  bool mariadb() const { return m_flavor == Flavor::mariadb; }
  bool percona() const { return m_percona; }
  const std::string& version() const { return m_version; }
  unsigned long version_number() const { return m_number; }
  bool portable() const { return m_portable; }
  // "mariadb" or "mysql" (Percona Server is "mysql"): the flavour the registry and the archive owner record.
  const char* flavor_name() const { return mariadb() ? "mariadb" : "mysql"; }
  // "MariaDB 10.11.19", "MySQL 8.4.3", "Percona Server 8.0.39-30" (+ " (portable path)" under the switch).
  std::string describe() const;

  // ---- deletes
  // DELETE ... RETURNING (MariaDB 10.0.5+): the one-pass delete of a batch; else the locked re-read and the
  // exact-key delete (MySQL, and MariaDB under the portable switch).
  bool delete_returning() const;

  // ---- partitions
  PartitionDetach partition_detach() const;

  // ---- copies
  // MariaDB's array-bound INSERT (COM_STMT_BULK_EXECUTE, MariaDB 10.2.6+); else LOAD DATA LOCAL or INSERTs.
  // The connection still checks the server's capability bits.
  bool bulk_insert() const;
  // `select` (a SELECT) stopped by the server after `ms` milliseconds: MariaDB `SET STATEMENT
  // max_statement_time=.. FOR`, MySQL's `/*+ MAX_EXECUTION_TIME(..) */` hint (which MariaDB reads as a comment:
  // under the portable switch the statement runs without a limit).
  std::string time_limited(const std::string& select, unsigned ms) const;

  // ---- replication
  // The statement that lists every replication channel: MariaDB `SHOW ALL SLAVES STATUS`; MySQL 8.0.22+ (and
  // MariaDB under the portable switch, which then sees its default connection) `SHOW REPLICA STATUS`; MySQL
  // before 8.0.22 `SHOW SLAVE STATUS` (8.4 removed it).
  std::string replica_status_sql() const;
  // The statement read when replica_status_sql() fails with a syntax error (1064): "" for none.
  std::string replica_status_fallback_sql() const;
  // SELECT of @@GLOBAL.read_only and super_read_only (MariaDB has no super_read_only: a constant 0).
  std::string read_only_sql() const;
  // Whether status variables any account reads (Slave_heartbeat_period, Slaves_running) tell a replica when
  // the account may not read the replication status: MariaDB only (MySQL, and the portable switch: no).
  bool replica_hint_from_status_variables() const;
  // The names of a column of a replica-status answer, MariaDB's (and MySQL's before 8.0.22) first, then MySQL's;
  // the first a row has is the one: the channel's name, its lag, its IO and SQL threads' state, its primary.
  enum class StatusColumn { channel, lag, io_running, sql_running, source_host, source_port };
  static const std::vector<const char*>& status_column(StatusColumn which);

  // ---- GTID and identity
  // The variables that tell a source's identity and GTID history, one SELECT: MariaDB @@server_id,
  // @@gtid_domain_id, @@gtid_binlog_state, @@gtid_slave_pos, @@log_bin; MySQL @@server_id, @@server_uuid,
  // @@gtid_mode, @@gtid_executed.
  std::string identity_sql() const;
  // Whether GTIDs are MariaDB's domain-server-sequence triples (else MySQL's uuid[:tag]:interval sets).
  bool gtid_domain_server_seq() const { return mariadb(); }
  // Whether @@server_uuid names the server (MySQL; MariaDB has no such variable).
  bool has_server_uuid() const { return !mariadb(); }

  // ---- named locks (GET_LOCK)
  // The longest lock name the server takes: MySQL 64 characters (longer: error 3057), MariaDB 192 bytes
  // (error 1059). goarchive's names are 44 ASCII characters.
  size_t lock_name_limit() const { return mariadb() ? 192 : 64; }
  // The error a user-lock deadlock raises: MariaDB 1213, MySQL 3058 (ER_USER_LOCK_DEADLOCK).
  unsigned lock_deadlock_error() const { return mariadb() ? 1213 : 3058; }
  // The error a too-long or empty lock name raises: MariaDB 1059, MySQL 3057 (ER_USER_LOCK_WRONG_NAME).
  unsigned lock_name_error() const { return mariadb() ? 1059 : 3057; }
  // Where a lock's holder is found beyond IS_USED_LOCK (the holder's connection id, on both): MySQL
  // performance_schema.metadata_locks (OBJECT_TYPE 'USER LEVEL LOCK'), MariaDB information_schema.METADATA_LOCK_INFO
  // (the metadata_lock_info plugin, seldom loaded): "" when the dialect knows none to rely on.
  std::string lock_holder_sql(const std::string& quoted_name) const;
  // The error a server sends before it closes an idle session (MySQL 8.0.24+ 4031 ER_CLIENT_INTERACTION_TIMEOUT;
  // MariaDB closes it silently: 0).
  unsigned idle_disconnect_error() const { return mariadb() ? 0 : 4031; }

  // ---- columns and keys
  // The error for a value written into a generated column: MariaDB 1906, MySQL 3105.
  unsigned generated_write_error() const { return mariadb() ? 1906 : 3105; }
  // The error a table without a primary key raises where the server requires one: MySQL 8.0.13+ under
  // sql_require_primary_key 3750 (ER_TABLE_WITHOUT_PK); MariaDB under innodb_force_primary_key 1173
  // (ER_REQUIRES_PRIMARY_KEY, measured on 10.11.19 here).
  unsigned require_primary_key_error() const { return mariadb() ? 1173 : 3750; }
  // The server setting that makes it refuse a table without a primary key: MySQL sql_require_primary_key (8.0.13+),
  // MariaDB innodb_force_primary_key (InnoDB tables).
  const char* require_primary_key_setting() const {
    return mariadb() ? "innodb_force_primary_key" : "sql_require_primary_key";
  }
  // Whether the server may add a generated invisible primary key (`my_row_id`, MySQL 8.0.30+ under
  // sql_generate_invisible_primary_key): such a column is the table's key but no application column.
  bool generates_invisible_primary_key() const { return !mariadb() && m_number >= 80030; }
  // Pure, recorded information_schema.COLUMNS values: whether a column of EXTRA `extra` is INVISIBLE (both:
  // "INVISIBLE"), generated (VIRTUAL/STORED GENERATED, MariaDB also PERSISTENT; not MySQL's DEFAULT_GENERATED),
  // and whether `name`/`extra` is a generated invisible primary key.
  static bool column_invisible(const std::string& extra);
  static bool column_generated(const std::string& extra);
  static bool column_gipk(const std::string& name, const std::string& extra);

  // ---- values
  // Whether JSON columns hold binary JSON that the server prints in its own normalized text (MySQL); MariaDB's
  // JSON is LONGTEXT and keeps the text as written.
  bool json_binary() const { return !mariadb(); }
  // Whether a JSON value copied from `source` to `destination` may read back as other text than it was sent
  // (a MariaDB text into MySQL's binary JSON): preflight refuses such an archive column
  // (json_storage_difference), and byte-exact verification would fail the batch rather than pass a rewritten
  // value (goarchive does not compare JSON canonically).
  static bool json_text_may_change(const Dialect& source, const Dialect& destination) {
    return !source.json_binary() && destination.json_binary();
  }

  // Pure, recorded information_schema.COLUMNS.COLUMN_TYPE values: why a source column of `source_type` cannot be
  // archived into a destination column of `destination_type` when the two differ in how the servers store JSON
  // (MariaDB's JSON is LONGTEXT with a json_valid CHECK, kept as written; MySQL's is `json`, binary, printed in its
  // normalized form), with the fix; "" when that is not the difference.
  static std::string json_storage_difference(const std::string& source_type, const std::string& destination_type);

  // ---- what differs here, for `validate`: one line per behaviour this server takes that another does not.
  std::vector<std::string> differences() const;

private:
  Flavor m_flavor = Flavor::mariadb;
  bool m_percona = false;
  bool m_portable = false;
  std::string m_version;
  unsigned long m_number = 0;
};

// The test-only switch: GOARCHIVE_TEST_PORTABLE=1 in a build with the test hooks (GOARCHIVE_FAULT_HOOKS, the
// Debug build's default). Never a user setting.
bool portable_switch();
// Refuses (ConfigError) GOARCHIVE_TEST_PORTABLE set to anything but "", "0" or "1", or set in a build without the
// test hooks, so that a test never mistakes such a run for a portable one. Called once, before the command runs.
void check_portable_environment();

}  // namespace goarchive::db

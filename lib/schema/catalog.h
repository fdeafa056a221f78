#pragma once
// Reads table metadata from a server's information_schema.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"

namespace goarchive::schema {

struct Column {
  std::string name;
  std::string data_type;    // lower case: int, varchar, blob, ...
  std::string column_type;  // full type: int(10) unsigned, varchar(20), ...
  std::string collation;
  bool nullable = true;
  bool generated = false;
  bool binary = false;  // sent and compared as bytes (X'..' literals)
  bool has_default = false;     // the server fills it when an INSERT leaves it out (DEFAULT ...)
  bool auto_increment = false;
  // FLOAT, DOUBLE, REAL: their text form does not round-trip, so they cannot identify a row.
  bool approximate() const { return data_type == "float" || data_type == "double" || data_type == "real"; }
  // The server can fill it when an INSERT names only other columns.
  bool server_fills() const { return generated || nullable || has_default; }
};

struct ForeignKey {
  std::string name;
  std::string database, table;  // the referencing (child) table
  std::vector<std::string> columns;
  std::string ref_database, ref_table;
  std::vector<std::string> ref_columns;
  // What deleting a referenced row does to the referencing rows (REFERENTIAL_CONSTRAINTS.DELETE_RULE, upper case):
  // RESTRICT, NO ACTION (the delete fails), CASCADE, SET NULL, SET DEFAULT (it changes them).
  std::string delete_rule = "RESTRICT";
  // The delete would fail rather than change the referencing rows.
  bool restricts() const { return delete_rule == "RESTRICT" || delete_rule == "NO ACTION"; }
};

struct TableInfo {
  std::string database, name;
  bool exists = false;
  std::string table_type;  // BASE TABLE, VIEW, ...
  std::string engine;
  std::vector<Column> columns;  // in ordinal order
  std::vector<std::string> primary_key;
  std::vector<std::vector<std::string>> unique_keys;  // incl. the primary key
  std::vector<ForeignKey> references;     // FKs declared on this table
  std::vector<ForeignKey> referenced_by;  // FKs of any table that point at this one
  std::vector<std::string> triggers;      // "DELETE BEFORE trg_name", ...

  const Column* column(const std::string& name) const;
  // Columns goarchive copies: every stored, non-generated column, in ordinal order.
  std::vector<std::string> data_columns() const;
  bool has_trigger(const std::string& event) const;
};

// Who a server is, from its own variables: the config text (host, port, socket) cannot tell two addresses of one
// server apart, nor a replica from its source.
struct ServerIdentity {
  bool mariadb = true;
  std::string server_uuid;  // MySQL only
  unsigned long long server_id = 0;
  std::string hostname, datadir;
  unsigned port = 0;
  bool case_insensitive_names = false;  // lower_case_table_names != 0
  // MariaDB: @@gtid_binlog_state + "," + @@gtid_slave_pos; MySQL: @@gtid_executed.
  std::string gtid_state;
};
ServerIdentity read_server_identity(db::Connection& conn);

// One replication channel of a server: a primary it replicates from.
struct ReplicaChannel {
  std::string name;     // "" for the default connection (MariaDB) or channel (MySQL)
  std::string primary;  // "host:port" of the server it replicates from (Master_Host:Master_Port)
  bool running = false;  // both the IO and the SQL thread run
};

// Whether a server is a replica, as the server says: its replication channels and its read-only switches.
struct ReplicaRole {
  std::vector<ReplicaChannel> channels;  // empty: no replication configured (as far as the account can see)
  // false: the account may not read the replication status (MariaDB SLAVE MONITOR, MySQL REPLICATION CLIENT).
  bool status_readable = true;
  // The status was not readable, but the server's status variables, which any account reads, say it replicates
  // (MariaDB: the default connection is configured, or a connection runs). Its primary is then unknown.
  bool replicates_unnamed = false;
  bool read_only = false, super_read_only = false;  // super_read_only: MySQL only
  bool replica() const { return !channels.empty() || replicates_unnamed; }
  bool read_only_any() const { return read_only || super_read_only; }
  // "127.0.0.1:3306", "a:3306 (connection 'x'), b:3306 (connection 'y')", or a sentence when unknown.
  std::string primaries() const;
  // "replication running", "replication configured, not running", ...
  std::string state() const;
};
// Pure: the channels in the output of SHOW ALL SLAVES STATUS (MariaDB) or SHOW REPLICA STATUS (MySQL), read by
// column name.
std::vector<ReplicaChannel> replica_channels(const db::RowSet& status);
// Reads the server's replication channels and read_only / super_read_only. Lacking the privilege to read the
// replication status is no error: the role then says what the account could see.
ReplicaRole read_replica_role(db::Connection& conn);

// Pure: how database `db_b` on server `b` relates to database `db_a` on server `a`. `same_server`: one server
// (by UUID on MySQL, else by hostname, port and datadir); `replicated`: one server holds transactions the other
// wrote (a replica, or the server it replicates from), by server_id (MariaDB, with distinct server_ids) or
// server_uuid (MySQL) in its GTID state, or (MySQL) one's GTID history holds the other's whole, tags included
// (guard::mysql_gtid_history_contains: a sibling replica). `same_data`: the same database name on such a pair.
struct DataRelation {
  bool same_server = false, replicated = false, same_data = false;
};
DataRelation relate(const ServerIdentity& a, const std::string& db_a, const ServerIdentity& b,
                    const std::string& db_b);

// Reads one table (columns, keys, foreign keys, triggers) with a handful of queries.
TableInfo read_table(db::Connection& conn, const std::string& database, const std::string& table);
// read_table for several tables of one database, with one scan for the foreign keys that point at any of them.
std::vector<TableInfo> read_tables(db::Connection& conn, const std::string& database,
                                   const std::vector<std::string>& tables);
bool database_exists(db::Connection& conn, const std::string& database);
// The text of SHOW CREATE TABLE for one table, with identifiers backquoted (sql_quote_show_create = 1).
std::string show_create_table(db::Connection& conn, const std::string& database, const std::string& table);

struct DatabaseDefaults {
  std::string charset, collation;
};
// The default character set and collation of a database; nullopt when it does not exist.
std::optional<DatabaseDefaults> database_defaults(db::Connection& conn, const std::string& database);

// Every foreign key declared in `database` or pointing into it from another database, for `discover`.
std::vector<ForeignKey> foreign_keys_in(db::Connection& conn, const std::string& database);

}  // namespace goarchive::schema

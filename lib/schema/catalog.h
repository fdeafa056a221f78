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
};

struct ForeignKey {
  std::string name;
  std::string database, table;  // the referencing (child) table
  std::vector<std::string> columns;
  std::string ref_database, ref_table;
  std::vector<std::string> ref_columns;
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

// Reads one table (columns, keys, foreign keys, triggers) with a handful of queries.
TableInfo read_table(db::Connection& conn, const std::string& database, const std::string& table);
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

#pragma once
// The destination's CREATE TABLE, rewritten from the source's SHOW CREATE TABLE: pure text, no server needed.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goarchive::plan {

// The one foreign key a destination table may keep: the job's relation from this table to its parent.
struct ParentReference {
  std::string table;                 // the parent table (in the source database)
  std::vector<std::string> columns;  // this table's foreign-key columns, as in the relation
};

struct DdlRewrite {
  std::string source_database;          // the database SHOW CREATE TABLE ran in
  std::string destination_database;     // qualifies the new table and every kept REFERENCES
  std::vector<std::string> job_tables;  // every table of the job, to word why a foreign key was left out
  std::optional<ParentReference> parent;  // the relation to the parent; nullopt for the root table
  bool foreign_key_checks = true;       // false ([destination] foreign_key_checks = false): keep no foreign key
};

struct DestinationDdl {
  std::string table;                 // the table name read from the statement
  std::string sql;                   // CREATE TABLE `destination`.`table` (...) ..., without a trailing ';'
  std::vector<std::string> dropped;  // what was left out and why, one line each
};

// Rewrites the text of SHOW CREATE TABLE (sql_quote_show_create = 1, no ANSI_QUOTES): qualifies the table with the
// destination database; keeps columns (generated and invisible ones as they are), keys, indexes and CHECK
// constraints; keeps a FOREIGN KEY only when it is the relation to the job's parent (re-qualified to the destination
// database); drops AUTO_INCREMENT (the table option and the column attribute), partitioning, DATA/INDEX DIRECTORY and
// TABLESPACE. Throws goarchive::Error when the text is not a CREATE TABLE it can parse.
DestinationDdl destination_ddl(std::string_view show_create, const DdlRewrite& rewrite);

// CREATE DATABASE IF NOT EXISTS `name` with the given default character set and collation (either may be empty).
std::string create_database_sql(std::string_view database, std::string_view charset, std::string_view collation);

}  // namespace goarchive::plan

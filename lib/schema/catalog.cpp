#include "schema/catalog.h"

#include <algorithm>
#include <set>

#include "plan/sql.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::schema {

const Column* TableInfo::column(const std::string& col) const {
  for (const auto& c : columns) {
    if (c.name == col) return &c;
  }
  // MySQL column names are case-insensitive.
  for (const auto& c : columns) {
    if (ascii_lower(c.name) == ascii_lower(col)) return &c;
  }
  return nullptr;
}

std::vector<std::string> TableInfo::data_columns() const {
  std::vector<std::string> out;
  for (const auto& c : columns) {
    if (!c.generated) out.push_back(c.name);
  }
  return out;
}

bool TableInfo::has_trigger(const std::string& event) const {
  return std::any_of(triggers.begin(), triggers.end(),
                     [&](const std::string& t) { return t.rfind(event + " ", 0) == 0; });
}

namespace {

bool binary_type(const std::string& data_type) {
  static const std::set<std::string> types = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit"};
  return types.count(data_type) > 0;
}

std::vector<ForeignKey> read_fks(db::Connection& conn, const std::string& where) {
  db::RowSet r = conn.query(
      "SELECT k.CONSTRAINT_NAME, k.TABLE_SCHEMA, k.TABLE_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, "
      "k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE k "
      "WHERE k.REFERENCED_TABLE_NAME IS NOT NULL AND " +
      where + " ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION");
  std::vector<ForeignKey> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (out.empty() || out.back().name != r.cell(i, 0) || out.back().table != r.cell(i, 2) ||
        out.back().database != r.cell(i, 1)) {
      out.push_back(ForeignKey{r.cell(i, 0), r.cell(i, 1), r.cell(i, 2), {}, r.cell(i, 4), r.cell(i, 5), {}});
    }
    out.back().columns.push_back(r.cell(i, 3));
    out.back().ref_columns.push_back(r.cell(i, 6));
  }
  return out;
}

}  // namespace

bool database_exists(db::Connection& conn, const std::string& database) {
  return conn.scalar("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = " + sql::quote(database))
             .value_or("0") != "0";
}

TableInfo read_table(db::Connection& conn, const std::string& database, const std::string& table) {
  TableInfo t;
  t.database = database;
  t.name = table;
  std::string db = sql::quote(database), tb = sql::quote(table);
  db::RowSet info = conn.query("SELECT TABLE_TYPE, IFNULL(ENGINE, '') FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                               db + " AND TABLE_NAME = " + tb);
  if (info.rows() == 0) return t;
  t.exists = true;
  t.table_type = info.cell(0, 0);
  t.engine = info.cell(0, 1);
  db::RowSet cols = conn.query(
      // EXTRA says "VIRTUAL GENERATED" / "STORED GENERATED" on MariaDB and MySQL 8 alike (MySQL has no
      // IS_GENERATED column). Not just "%GENERATED%": MySQL marks `DEFAULT CURRENT_TIMESTAMP` columns
      // "DEFAULT_GENERATED", and those hold data that must be copied.
      "SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, IFNULL(COLLATION_NAME, ''), IS_NULLABLE, "
      "IF(EXTRA LIKE '%VIRTUAL GENERATED%' OR EXTRA LIKE '%STORED GENERATED%' OR EXTRA LIKE '%PERSISTENT GENERATED%', "
      "'ALWAYS', 'NEVER') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " +
      db + " AND TABLE_NAME = " + tb + " ORDER BY ORDINAL_POSITION");
  for (size_t i = 0; i < cols.rows(); ++i) {
    Column c;
    c.name = cols.cell(i, 0);
    c.data_type = cols.cell(i, 1);
    c.column_type = cols.cell(i, 2);
    c.collation = cols.cell(i, 3);
    c.nullable = cols.cell(i, 4) == "YES";
    c.generated = cols.cell(i, 5) != "NEVER";
    c.binary = binary_type(c.data_type);
    t.columns.push_back(std::move(c));
  }
  db::RowSet keys = conn.query(
      "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = " + db +
      " AND TABLE_NAME = " + tb + " AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX");
  std::string current;
  for (size_t i = 0; i < keys.rows(); ++i) {
    if (keys.cell(i, 0) != current || t.unique_keys.empty()) {
      current = keys.cell(i, 0);
      t.unique_keys.emplace_back();
    }
    t.unique_keys.back().push_back(keys.cell(i, 1));
    if (current == "PRIMARY") t.primary_key.push_back(keys.cell(i, 1));
  }
  t.references = read_fks(conn, "k.TABLE_SCHEMA = " + db + " AND k.TABLE_NAME = " + tb);
  t.referenced_by = read_fks(conn, "k.REFERENCED_TABLE_SCHEMA = " + db + " AND k.REFERENCED_TABLE_NAME = " + tb);
  db::RowSet trg = conn.query(
      "SELECT EVENT_MANIPULATION, ACTION_TIMING, TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
      "EVENT_OBJECT_SCHEMA = " + db + " AND EVENT_OBJECT_TABLE = " + tb);
  for (size_t i = 0; i < trg.rows(); ++i) {
    t.triggers.push_back(trg.cell(i, 0) + " " + trg.cell(i, 1) + " " + trg.cell(i, 2));
  }
  return t;
}

std::string show_create_table(db::Connection& conn, const std::string& database, const std::string& table) {
  // The rewrite in plan/ddl reads identifiers as backquoted names; the session's sql_mode has no ANSI_QUOTES.
  conn.execute("SET SESSION sql_quote_show_create = 1");
  db::RowSet r = conn.query("SHOW CREATE TABLE " + sql::qualified(database, table));
  if (r.rows() != 1 || r.cols() < 2) {
    throw Error("SHOW CREATE TABLE " + sql::qualified(database, table) + " returned no table definition");
  }
  return r.cell(0, 1);
}

std::optional<DatabaseDefaults> database_defaults(db::Connection& conn, const std::string& database) {
  db::RowSet r = conn.query(
      "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = " +
      sql::quote(database));
  if (r.rows() == 0) return std::nullopt;
  return DatabaseDefaults{r.cell(0, 0), r.cell(0, 1)};
}

std::vector<ForeignKey> foreign_keys_in(db::Connection& conn, const std::string& database) {
  // Keys declared in the database, and keys of other databases that point into it.
  return read_fks(conn, "(k.TABLE_SCHEMA = " + sql::quote(database) + " OR k.REFERENCED_TABLE_SCHEMA = " +
                            sql::quote(database) + ")");
}

}  // namespace goarchive::schema

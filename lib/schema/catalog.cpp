#include "schema/catalog.h"

#include <algorithm>
#include <set>

#include "guard/gtid.h"
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
      "k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, IFNULL(rc.DELETE_RULE, 'RESTRICT') "
      "FROM information_schema.KEY_COLUMN_USAGE k LEFT JOIN information_schema.REFERENTIAL_CONSTRAINTS rc "
      "ON rc.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND rc.CONSTRAINT_NAME = k.CONSTRAINT_NAME "
      "AND rc.TABLE_NAME = k.TABLE_NAME "
      "WHERE k.REFERENCED_TABLE_NAME IS NOT NULL AND " +
      where + " ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION");
  std::vector<ForeignKey> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (out.empty() || out.back().name != r.cell(i, 0) || out.back().table != r.cell(i, 2) ||
        out.back().database != r.cell(i, 1)) {
      out.push_back(ForeignKey{r.cell(i, 0), r.cell(i, 1), r.cell(i, 2), {}, r.cell(i, 4), r.cell(i, 5), {},
                                r.cell(i, 7)});
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
      // COLUMN_DEFAULT is NULL for a column without a default (and the text 'NULL' for DEFAULT NULL on MariaDB).
      "SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, IFNULL(COLLATION_NAME, ''), IS_NULLABLE, "
      "IF(EXTRA LIKE '%VIRTUAL GENERATED%' OR EXTRA LIKE '%STORED GENERATED%' OR EXTRA LIKE '%PERSISTENT GENERATED%', "
      "'ALWAYS', 'NEVER'), COLUMN_DEFAULT IS NOT NULL, EXTRA LIKE '%auto_increment%' "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " +
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
    c.has_default = cols.cell(i, 6) == "1";
    c.auto_increment = cols.cell(i, 7) == "1";
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

ServerIdentity read_server_identity(db::Connection& conn) {
  ServerIdentity id;
  id.mariadb = conn.info().mariadb;
  db::RowSet r = conn.query("SELECT @@server_id, @@hostname, @@port, @@datadir, @@lower_case_table_names");
  id.server_id = std::stoull(r.cell(0, 0));
  id.hostname = r.cell(0, 1);
  id.port = static_cast<unsigned>(std::stoul(r.cell(0, 2)));
  id.datadir = r.cell(0, 3);
  id.case_insensitive_names = r.cell(0, 4) != "0";
  if (id.mariadb) {
    db::RowSet g = conn.query("SELECT @@gtid_binlog_state, @@gtid_slave_pos");
    id.gtid_state = g.cell(0, 0) + "," + g.cell(0, 1);
  } else {
    db::RowSet g = conn.query("SELECT @@server_uuid, @@gtid_executed");
    id.server_uuid = g.cell(0, 0);
    id.gtid_state = g.cell(0, 1);
  }
  return id;
}

namespace {

// Whether `self`'s GTID history holds transactions that `origin` wrote.
bool holds_transactions_of(const ServerIdentity& self, const ServerIdentity& origin) {
  if (!self.mariadb) {
    if (origin.server_uuid.empty()) return false;
    for (const auto& u : guard::parse_mysql_gtid_uuids(self.gtid_state)) {
      if (u == ascii_lower(origin.server_uuid)) return true;
    }
    return false;
  }
  // Two servers with one server_id cannot replicate from each other (a replica skips its own server_id's
  // events), and a GTID with that id says nothing about which of them wrote it.
  if (self.server_id == origin.server_id) return false;
  for (const auto& g : guard::parse_mariadb_gtids(self.gtid_state)) {
    if (g.server_id == origin.server_id) return true;
  }
  return false;
}

}  // namespace

DataRelation relate(const ServerIdentity& a, const std::string& db_a, const ServerIdentity& b,
                    const std::string& db_b) {
  DataRelation rel;
  if (!a.mariadb && !b.mariadb && !a.server_uuid.empty() && !b.server_uuid.empty()) {
    rel.same_server = ascii_lower(a.server_uuid) == ascii_lower(b.server_uuid);
  } else {
    rel.same_server = a.mariadb == b.mariadb && a.server_id == b.server_id && a.port == b.port &&
                      ascii_lower(a.hostname) == ascii_lower(b.hostname) && a.datadir == b.datadir;
  }
  if (!rel.same_server && a.mariadb == b.mariadb) {
    rel.replicated = holds_transactions_of(a, b) || holds_transactions_of(b, a);
  }
  bool insensitive = a.case_insensitive_names || b.case_insensitive_names;
  bool same_name = insensitive ? ascii_lower(db_a) == ascii_lower(db_b) : db_a == db_b;
  rel.same_data = same_name && (rel.same_server || rel.replicated);
  return rel;
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

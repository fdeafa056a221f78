#include "schema/catalog.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

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
  // Spatial values travel as the server's own bytes (SRID + WKB), which a geometry column takes back as they are.
  static const std::set<std::string> types = {"binary",     "varbinary",       "tinyblob",     "blob",
                                              "mediumblob", "longblob",        "bit",          "geometry",
                                              "point",      "linestring",      "polygon",      "multipoint",
                                              "multilinestring", "multipolygon", "geometrycollection"};
  return types.count(data_type) > 0;
}

// Foreign keys read from KEY_COLUMN_USAGE, one entry per key, with the constraint's schema and, per key, the value
// of each extra boolean column asked for (the same on every row of a key).
struct FkRows {
  std::vector<ForeignKey> fks;
  std::vector<std::string> constraint_schema;
  std::vector<std::vector<bool>> flags;
};

FkRows read_fk_rows(db::Connection& conn, const std::string& where, const std::vector<std::string>& flags) {
  std::string extra;
  for (const auto& f : flags) extra += ", (" + f + ")";
  db::RowSet r = conn.query(
      "SELECT k.CONSTRAINT_NAME, k.TABLE_SCHEMA, k.TABLE_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, "
      "k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, k.CONSTRAINT_SCHEMA" + extra +
      " FROM information_schema.KEY_COLUMN_USAGE k WHERE k.REFERENCED_TABLE_NAME IS NOT NULL AND " + where +
      " ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION");
  FkRows out;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (out.fks.empty() || out.fks.back().name != r.text(i, 0) || out.fks.back().table != r.text(i, 2) ||
        out.fks.back().database != r.text(i, 1)) {
      out.fks.push_back(ForeignKey{r.text(i, 0), r.text(i, 1), r.text(i, 2), {}, r.text(i, 4), r.text(i, 5), {},
                                   "RESTRICT"});
      out.constraint_schema.push_back(r.text(i, 7));
      std::vector<bool> values;
      for (size_t f = 0; f < flags.size(); ++f) values.push_back(r.text(i, 8 + f) == "1");
      out.flags.push_back(std::move(values));
    }
    out.fks.back().columns.push_back(r.text(i, 3));
    out.fks.back().ref_columns.push_back(r.text(i, 6));
  }
  return out;
}

// Each key's delete rule, read per referencing table (CONSTRAINT_SCHEMA and TABLE_NAME given as constants), never
// by a join: information_schema only looks up the tables a constant names, and joining the two views made the
// server open every table of every database (measured on MariaDB 10.11 with 4 tables: 52 ms cold, 6.5 ms warm,
// against under 1 ms for the split reads); on a server with thousands of tables that is seconds of every start.
// A key without a REFERENTIAL_CONSTRAINTS row keeps RESTRICT.
void add_delete_rules(db::Connection& conn, FkRows& rows) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> rules;
  for (size_t f = 0; f < rows.fks.size(); ++f) {
    auto key = std::make_pair(rows.constraint_schema[f], rows.fks[f].table);
    if (rules.count(key)) continue;
    auto& by_name = rules[key];
    db::RowSet rc = conn.query("SELECT CONSTRAINT_NAME, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS "
                               "WHERE CONSTRAINT_SCHEMA = " + sql::quote(key.first) +
                               " AND TABLE_NAME = " + sql::quote(key.second));
    for (size_t i = 0; i < rc.rows(); ++i) by_name[rc.text(i, 0)] = rc.text(i, 1);
  }
  for (size_t f = 0; f < rows.fks.size(); ++f) {
    const auto& by_name = rules[std::make_pair(rows.constraint_schema[f], rows.fks[f].table)];
    auto it = by_name.find(rows.fks[f].name);
    if (it != by_name.end() && !it->second.empty()) rows.fks[f].delete_rule = it->second;
  }
}

}  // namespace

bool database_exists(db::Connection& conn, const std::string& database) {
  return conn.scalar("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = " + sql::quote(database))
             .value_or("0") != "0";
}

namespace {

// Everything of one table but the foreign keys that point at it.
TableInfo read_own(db::Connection& conn, const std::string& database, const std::string& table) {
  TableInfo t;
  t.database = database;
  t.name = table;
  std::string db = sql::quote(database), tb = sql::quote(table);
  db::RowSet info = conn.query("SELECT TABLE_TYPE, IFNULL(ENGINE, '') FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                               db + " AND TABLE_NAME = " + tb);
  if (info.rows() == 0) return t;
  t.exists = true;
  t.table_type = info.text(0, 0);
  t.engine = info.text(0, 1);
  db::RowSet cols = conn.query(
      // EXTRA says which columns are generated, on MariaDB and MySQL 8 alike (MySQL has no IS_GENERATED
      // column): db::Dialect::column_generated reads it.
      // COLUMN_DEFAULT is NULL for a column without a default (and the text 'NULL' for DEFAULT NULL on MariaDB).
      "SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, IFNULL(COLLATION_NAME, ''), IS_NULLABLE, "
      "IFNULL(EXTRA, ''), COLUMN_DEFAULT IS NOT NULL, EXTRA LIKE '%auto_increment%' "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " +
      db + " AND TABLE_NAME = " + tb + " ORDER BY ORDINAL_POSITION");
  for (size_t i = 0; i < cols.rows(); ++i) {
    Column c;
    c.name = cols.text(i, 0);
    c.data_type = cols.text(i, 1);
    c.column_type = cols.text(i, 2);
    c.collation = cols.text(i, 3);
    c.nullable = cols.text(i, 4) == "YES";
    c.generated = db::Dialect::column_generated(cols.text(i, 5));
    c.binary = binary_type(c.data_type);
    c.has_default = cols.text(i, 6) == "1";
    c.auto_increment = cols.text(i, 7) == "1";
    t.columns.push_back(std::move(c));
  }
  db::RowSet keys = conn.query(
      "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = " + db +
      " AND TABLE_NAME = " + tb + " AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX");
  std::string current;
  for (size_t i = 0; i < keys.rows(); ++i) {
    if (keys.text(i, 0) != current || t.unique_keys.empty()) {
      current = keys.text(i, 0);
      t.unique_keys.emplace_back();
    }
    t.unique_keys.back().push_back(keys.text(i, 1));
    if (current == "PRIMARY") t.primary_key.push_back(keys.text(i, 1));
  }
  FkRows own = read_fk_rows(conn, "k.TABLE_SCHEMA = " + db + " AND k.TABLE_NAME = " + tb, {});
  add_delete_rules(conn, own);
  t.references = std::move(own.fks);
  db::RowSet trg = conn.query(
      "SELECT EVENT_MANIPULATION, ACTION_TIMING, TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
      "EVENT_OBJECT_SCHEMA = " + db + " AND EVENT_OBJECT_TABLE = " + tb);
  for (size_t i = 0; i < trg.rows(); ++i) {
    t.triggers.push_back(trg.text(i, 0) + " " + trg.text(i, 1) + " " + trg.text(i, 2));
  }
  return t;
}

}  // namespace

std::vector<TableInfo> read_tables(db::Connection& conn, const std::string& database,
                                   const std::vector<std::string>& tables) {
  std::vector<TableInfo> out;
  for (const auto& t : tables) out.push_back(read_own(conn, database, t));
  if (tables.empty()) return out;
  // The keys that point at any of them in one read: information_schema cannot look a key up by the table it
  // references, so every such read opens every table of the server. One flag per table says which it points
  // at, compared as the server compares (the names' collation), as one query per table did.
  std::string names;
  std::vector<std::string> flags;
  for (const auto& t : tables) {
    names += (names.empty() ? "" : ", ") + sql::quote(t);
    flags.push_back("k.REFERENCED_TABLE_NAME = " + sql::quote(t));
  }
  FkRows in = read_fk_rows(conn, "k.REFERENCED_TABLE_SCHEMA = " + sql::quote(database) +
                                     " AND k.REFERENCED_TABLE_NAME IN (" + names + ")", flags);
  add_delete_rules(conn, in);
  for (size_t f = 0; f < in.fks.size(); ++f) {
    for (size_t t = 0; t < out.size(); ++t) {
      if (in.flags[f][t] && out[t].exists) out[t].referenced_by.push_back(in.fks[f]);
    }
  }
  return out;
}

TableInfo read_table(db::Connection& conn, const std::string& database, const std::string& table) {
  return std::move(read_tables(conn, database, {table}).front());
}

ServerIdentity read_server_identity(db::Connection& conn) {
  ServerIdentity id;
  id.mariadb = conn.dialect().mariadb();
  db::RowSet r = conn.query("SELECT @@server_id, @@hostname, @@port, @@datadir, @@lower_case_table_names");
  id.server_id = std::stoull(r.text(0, 0));
  id.hostname = r.text(0, 1);
  id.port = static_cast<unsigned>(std::stoul(r.text(0, 2)));
  id.datadir = r.text(0, 3);
  id.case_insensitive_names = r.text(0, 4) != "0";
  if (conn.dialect().gtid_domain_server_seq()) {
    db::RowSet g = conn.query("SELECT @@gtid_binlog_state, @@gtid_slave_pos");
    id.gtid_state = g.text(0, 0) + "," + g.text(0, 1);
  } else {
    db::RowSet g = conn.query("SELECT @@server_uuid, @@gtid_executed");
    id.server_uuid = g.text(0, 0);
    id.gtid_state = g.text(0, 1);
  }
  return id;
}

namespace {

// The value of the first of `names` (MariaDB's name, then MySQL 8's) in row `row`, or "".
using Col = db::Dialect::StatusColumn;
const std::vector<const char*>& column(Col which) { return db::Dialect::status_column(which); }

std::string status_field(const db::RowSet& r, size_t row, const std::vector<const char*>& names) {
  for (const char* n : names) {
    for (size_t c = 0; c < r.cols(); ++c) {
      if (ascii_lower(r.names()[c]) == ascii_lower(n)) return r.text(row, c);
    }
  }
  return "";
}

// A switch's value: 0/1, OFF/ON, and MariaDB 11's read_only modes (NO_LOCK, NO_LOCK_NO_ADMIN: all read-only).
bool switched_on(const std::string& v) {
  std::string l = ascii_lower(v);
  return !(l.empty() || l == "0" || l == "off");
}

}  // namespace

std::vector<ReplicaChannel> replica_channels(const db::RowSet& status) {
  std::vector<ReplicaChannel> out;
  for (size_t i = 0; i < status.rows(); ++i) {
    ReplicaChannel ch;
    ch.name = status_field(status, i, column(Col::channel));
    std::string host = status_field(status, i, column(Col::source_host));
    std::string port = status_field(status, i, column(Col::source_port));
    ch.primary = host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : host + ":" + port;
    ch.running = status_field(status, i, column(Col::io_running)) == "Yes" &&
                 status_field(status, i, column(Col::sql_running)) == "Yes";
    out.push_back(std::move(ch));
  }
  return out;
}

std::string ReplicaRole::primaries() const {
  if (channels.empty()) {
    return replicates_unnamed ? "a primary it does not name to this account (SHOW SLAVE STATUS needs SLAVE MONITOR)"
                              : "no primary";
  }
  std::vector<std::string> out;
  for (const auto& ch : channels) {
    out.push_back(ch.name.empty() ? ch.primary : fmt::format("{} (connection '{}')", ch.primary, ch.name));
  }
  return join(out, ", ");
}

std::string ReplicaRole::state() const {
  if (channels.empty()) return replicates_unnamed ? "replication configured" : "no replication";
  bool all = std::all_of(channels.begin(), channels.end(), [](const auto& c) { return c.running; });
  bool none = std::none_of(channels.begin(), channels.end(), [](const auto& c) { return c.running; });
  return all ? "replication running" : none ? "replication configured, not running" : "replication partly running";
}

ReplicaRole read_replica_role(db::Connection& conn) {
  ReplicaRole role;
  const db::Dialect& dialect = conn.dialect();
  db::RowSet v = conn.query(dialect.read_only_sql());
  role.read_only = switched_on(v.text(0, 0));
  role.super_read_only = switched_on(v.text(0, 1));
  try {
    role.channels = replica_channels(conn.query(dialect.replica_status_sql()));
  } catch (const db::DbError& e) {
    // 1227: the account lacks SLAVE MONITOR (MariaDB) or REPLICATION CLIENT (MySQL); 1064: a MySQL-like server
    // that lacks the statement its version promises.
    if (e.code() == 1064 && !dialect.replica_status_fallback_sql().empty()) {
      role.channels = replica_channels(conn.query(dialect.replica_status_fallback_sql()));
      return role;
    }
    if (e.code() != 1227 && e.code() != 1142) throw;
    role.status_readable = false;
    if (dialect.replica_hint_from_status_variables()) {
      // Any account reads these: the default connection keeps its heartbeat period while it is configured,
      // stopped or not (measured on 10.11: 30.000 on a stopped replica, 0.000 on a server that never replicated),
      // and Slaves_running counts the connections that run.
      db::RowSet s = conn.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Slave_heartbeat_period', 'Slaves_running')");
      for (size_t i = 0; i < s.rows(); ++i) {
        double value = 0;
        try {
          value = std::stod(s.text(i, 1));
        } catch (const std::exception&) {
        }
        if (value > 0) role.replicates_unnamed = true;
      }
    }
  }
  return role;
}

namespace {

// Whether `self`'s GTID history holds transactions that `origin` wrote.
bool holds_transactions_of(const ServerIdentity& self, const ServerIdentity& origin) {
  if (!self.mariadb) {
    // A history that holds the other's whole recorded history: a replica of the same primary holds its data
    // though neither wrote a transaction of the other (a failover between siblings).
    if (guard::mysql_gtid_history_contains(self.gtid_state, origin.gtid_state)) return true;
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
  return r.text(0, 1);
}

std::optional<DatabaseDefaults> database_defaults(db::Connection& conn, const std::string& database) {
  db::RowSet r = conn.query(
      "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = " +
      sql::quote(database));
  if (r.rows() == 0) return std::nullopt;
  return DatabaseDefaults{r.text(0, 0), r.text(0, 1)};
}

std::vector<ForeignKey> foreign_keys_in(db::Connection& conn, const std::string& database) {
  // Keys declared in the database, and keys of other databases that point into it.
  FkRows rows = read_fk_rows(conn, "(k.TABLE_SCHEMA = " + sql::quote(database) + " OR k.REFERENCED_TABLE_SCHEMA = " +
                                       sql::quote(database) + ")", {});
  add_delete_rules(conn, rows);
  return std::move(rows.fks);
}

}  // namespace goarchive::schema

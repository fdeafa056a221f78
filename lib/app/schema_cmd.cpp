// schema: the destination tables of a job, from the source's definitions; printed, or created with --apply.
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/session.h"
#include "plan/ddl.h"
#include "plan/sql.h"
#include "plan/tree.h"
#include "schema/catalog.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

struct TableDdl {
  std::string table;
  plan::DestinationDdl ddl;
};

// The refusal of a source table without a primary key: its archive table would have none either. goarchive
// copies, verifies and deletes by exact key (preflight refuses such a table for every run), and a server that
// requires primary keys would refuse the CREATE TABLE halfway through the job's tables.
std::string no_primary_key(const db::Connection& src, const std::string& database, const std::string& table) {
  std::string gipk;
  if (src.dialect().generates_invisible_primary_key()) {
    gipk = " (a generated invisible primary key, my_row_id, shows only with "
           "show_gipk_in_create_table_and_information_schema = ON)";
  }
  return fmt::format("table {}.{} has no primary key{}: its archive table would have none, and goarchive copies, "
                     "verifies and deletes rows by exact key (and a server that requires primary keys, under "
                     "MySQL's sql_require_primary_key or MariaDB's innodb_force_primary_key, refuses such a table); "
                     "add one on the source: ALTER TABLE {} ADD PRIMARY KEY (...); nothing was created",
                     database, table, gipk, sql::qualified(database, table));
}

// Reads and rewrites every table of the job, parents first, before anything is written anywhere.
std::vector<TableDdl> read_definitions(const config::Config& cfg, const config::Job& job, const plan::Tree& tree,
                                       db::Connection& src) {
  const std::string& sdb = cfg.source.database;
  std::vector<std::string> job_tables;
  for (const auto& n : tree.nodes()) job_tables.push_back(n.table);
  std::vector<TableDdl> out;
  for (int i : tree.copy_order()) {
    const plan::Node& n = tree.nodes()[static_cast<size_t>(i)];
    schema::TableInfo t = schema::read_table(src, sdb, n.table);
    if (!t.exists) {
      throw ConfigError(fmt::format("table {}.{} does not exist on the source ({}); fix the table name in [jobs.{}]",
                                    sdb, n.table, src.label(), job.name));
    }
    if (t.table_type != "BASE TABLE") {
      throw ConfigError(fmt::format("{}.{} is a {}, not a base table: goarchive archives base tables only; name the "
                                    "underlying table in [jobs.{}]",
                                    sdb, n.table, ascii_lower(t.table_type), job.name));
    }
    if (ascii_lower(t.engine) != "innodb") {
      throw PreflightError(fmt::format("table {}.{} uses the {} engine: goarchive archives InnoDB tables only; run "
                                       "ALTER TABLE {} ENGINE=InnoDB on the source first",
                                       sdb, n.table, t.engine, sql::qualified(sdb, n.table)));
    }
    if (t.primary_key.empty()) throw PreflightError(no_primary_key(src, sdb, n.table));
    plan::DdlRewrite rw;
    rw.source_database = sdb;
    rw.destination_database = cfg.destination.database;
    rw.job_tables = job_tables;
    rw.foreign_key_checks = cfg.destination.foreign_key_checks;
    if (n.parent >= 0) {
      rw.parent = plan::ParentReference{tree.nodes()[static_cast<size_t>(n.parent)].table, n.foreign_key};
    }
    out.push_back(TableDdl{n.table, plan::destination_ddl(schema::show_create_table(src, sdb, n.table), rw)});
  }
  return out;
}

bool table_exists(db::Connection& conn, const std::string& database, const std::string& table) {
  return conn.scalar("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + sql::quote(database) +
                     " AND TABLE_NAME = " + sql::quote(table))
             .value_or("0") != "0";
}

// A table the server already has: another run or a person created it between our check and our CREATE.
constexpr unsigned k_table_exists_error = 1050;

// What the run needs from the source before anything is written: the tables' DDL, the CREATE DATABASE
// statement (the source database's defaults) and the note on foreign keys.
struct SchemaPlan {
  std::vector<TableDdl> tables;
  std::string create_db;
  std::string fks;
  schema::DatabaseDefaults defaults;
};

void require_databases(const config::Config& cfg) {
  if (cfg.source.database.empty()) {
    throw ConfigError("[source] has no database; set database = \"<schema>\" in [source]");
  }
  if (cfg.destination.database.empty()) {
    throw ConfigError("[destination] has no database; set database = \"<archive schema>\" in [destination]");
  }
}

SchemaPlan read_plan(const config::Config& cfg, const config::Job& job, const plan::Tree& tree, db::Connection& src) {
  const std::string& sdb = cfg.source.database;
  auto defaults = schema::database_defaults(src, sdb);
  if (!defaults) {
    throw ConfigError(fmt::format("the source database {} does not exist on {}; fix [source] database", sdb,
                                  src.label()));
  }
  SchemaPlan p;
  p.tables = read_definitions(cfg, job, tree, src);
  p.create_db = plan::create_database_sql(cfg.destination.database, defaults->charset, defaults->collation);
  p.fks = cfg.destination.foreign_key_checks ? "foreign keys only along the job's relations"
                                             : "no foreign keys ([destination] foreign_key_checks = false)";
  p.defaults = *defaults;
  return p;
}

// Valid SQL for `mariadb`: the statements --apply runs, in its order; notes are comment lines.
void print_sql(const config::Config& cfg, const config::Job& job, const SchemaPlan& p, const db::Connection& src) {
  std::cout << fmt::format("-- goarchive schema of job {}: source database {} on {}, destination database {}\n"
                           "-- parents before children; {}; no triggers, no AUTO_INCREMENT, no partitioning\n",
                           job.name, cfg.source.database, src.label(), cfg.destination.database, p.fks);
  std::cout << p.create_db << ";\n";
  for (const auto& t : p.tables) {
    std::cout << "\n-- " << t.table << "\n";
    for (const auto& d : t.ddl.dropped) std::cout << "-- left out: " << d << "\n";
    std::cout << t.ddl.sql << ";\n";
  }
}

void create_database(const config::Config& cfg, const SchemaPlan& p, db::Connection& dst) {
  const std::string& ddb = cfg.destination.database;
  if (schema::database_exists(dst, ddb)) {
    std::cout << fmt::format("database {} exists on {}, left as is\n", ddb, dst.label());
  } else {
    dst.execute(p.create_db);
    std::cout << fmt::format("created database {} on {} (character set {}, collation {}, as the source's {})\n", ddb,
                             dst.label(), p.defaults.charset, p.defaults.collation, cfg.source.database);
  }
}

// Creates the table unless it exists; true when it was created here.
bool create_table(db::Connection& dst, const std::string& ddb, const TableDdl& t) {
  std::string name = ddb + "." + t.table;
  bool exists = table_exists(dst, ddb, t.table);
  if (!exists) {
    try {
      dst.execute(t.ddl.sql);
    } catch (const db::DbError& e) {
      if (e.code() == dst.dialect().require_primary_key_error()) {
        // Every table `schema` creates keeps its source's primary key: a source table without one is refused
        // before any DDL. A refusal here means the statement lost it: say so rather than leave a bare error.
        throw Error(fmt::format("creating table {} failed: the destination requires a primary key on every table "
                                "({} = ON) and this statement has none ({}); nothing else was created after it. Give "
                                "the source table a primary key and run goarchive schema again, or create the table "
                                "by hand with one; the statement was:\n{}",
                                name, dst.dialect().require_primary_key_setting(), e.what(), t.ddl.sql));
      }
      if (e.code() != k_table_exists_error) {
        throw Error(fmt::format("creating table {} failed: {}; nothing else was created after it (the tables "
                                "above are in place); the statement was:\n{}",
                                name, e.what(), t.ddl.sql));
      }
      exists = true;
    }
  }
  if (exists) {
    std::cout << fmt::format("table {} exists, left as is\n", name);
    return false;
  }
  std::cout << fmt::format("created table {}\n", name);
  for (const auto& d : t.ddl.dropped) std::cout << "  left out: " << d << "\n";
  spdlog::debug("{}", t.ddl.sql);
  return true;
}

}  // namespace

int schema(const config::Config& cfg, const std::string& job_name, bool apply) {
  const config::Job& job = cfg.job(job_name);
  plan::Tree tree(job);
  require_databases(cfg);
  auto src = connect(cfg.source, "source (schema)", sql::tag(job.name, 0));
  src->execute("SET SESSION TRANSACTION READ ONLY");
  SchemaPlan p = read_plan(cfg, job, tree, *src);
  if (!apply) {
    print_sql(cfg, job, p, *src);
    return k_exit_ok;
  }
  auto dst = connect(cfg.destination, "destination (schema)", sql::tag(job.name, 0));
  create_database(cfg, p, *dst);
  size_t created = 0, kept = 0;
  for (const auto& t : p.tables) ++(create_table(*dst, cfg.destination.database, t) ? created : kept);
  std::cout << fmt::format("schema of job {}: {} table{} created, {} left as is; {}\n", job.name, created,
                           created == 1 ? "" : "s", kept, p.fks);
  return k_exit_ok;
}

}  // namespace goarchive::app

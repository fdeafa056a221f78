// The dialect layer's choices (db/dialect.h) for MariaDB, MySQL and Percona Server, with and without the portable
// switch. The MariaDB version strings are this machine's servers' (mariadb-facts §0); the MySQL ones are in
// test_recorded_mysql.cpp with their sources.
#include <doctest/doctest.h>

#include <cstdlib>

#include "db/dialect.h"
#include "util/error.h"

using goarchive::db::Dialect;
using goarchive::db::Flavor;
using goarchive::db::PartitionDetach;

namespace {
Dialect maria(bool portable = false) { return Dialect::from_server("10.11.19-MariaDB-0+deb12u1", 101119, portable); }
Dialect mysql(const char* v, unsigned long n = 0) { return Dialect::from_server(v, n, false); }
}  // namespace

TEST_CASE("dialect: MariaDB 10.11 takes its own fast paths") {
  Dialect d = maria();
  CHECK(d.flavor() == Flavor::mariadb);
  CHECK(std::string(d.flavor_name()) == "mariadb");
  CHECK(d.describe() == "MariaDB 10.11.19");
  CHECK(d.delete_returning());
  CHECK(d.partition_detach() == PartitionDetach::convert);
  CHECK(d.bulk_insert());
  CHECK(d.replica_status_sql() == "SHOW ALL SLAVES STATUS");
  CHECK(d.replica_status_fallback_sql().empty());
  CHECK(d.replica_hint_from_status_variables());
  CHECK(d.read_only_sql() == "SELECT @@GLOBAL.read_only, 0");
  CHECK(d.gtid_domain_server_seq());
  CHECK_FALSE(d.has_server_uuid());
  CHECK(d.lock_name_limit() == 192);
  CHECK(d.lock_deadlock_error() == 1213);
  CHECK(d.lock_name_error() == 1059);
  CHECK(d.generated_write_error() == 1906);
  CHECK_FALSE(d.json_binary());
  CHECK(d.time_limited("SELECT COUNT(*) FROM t", 2000) == "SET STATEMENT max_statement_time=2 FOR SELECT COUNT(*) FROM t");
  CHECK(d.time_limited("SELECT 1", 1500) == "SET STATEMENT max_statement_time=1.500 FOR SELECT 1");
}

TEST_CASE("dialect: the version number comes from the text when the library gives none") {
  CHECK(maria().version_number() == 101119);
  CHECK(Dialect::from_server("10.11.19-MariaDB-0+deb12u1", 0, false).version_number() == 101119);
  // The handshake form an old replication client sees.
  Dialect old = Dialect::from_server("5.5.5-10.6.4-MariaDB-log", 0, false);
  CHECK(old.mariadb());
  CHECK(old.version_number() == 100604);
  CHECK(old.partition_detach() == PartitionDetach::exchange);  // CONVERT PARTITION is MariaDB 10.7+
  CHECK(Dialect::from_server("11.4.2-MariaDB", 0, false).partition_detach() == PartitionDetach::convert);
}

TEST_CASE("dialect: the portable switch takes MySQL's choices on MariaDB and keeps what the server is") {
  Dialect d = maria(true);
  CHECK(d.mariadb());
  CHECK(std::string(d.flavor_name()) == "mariadb");  // what the registry records does not change
  CHECK(d.portable());
  CHECK_FALSE(d.delete_returning());
  CHECK(d.partition_detach() == PartitionDetach::exchange);
  CHECK_FALSE(d.bulk_insert());
  CHECK(d.replica_status_sql() == "SHOW REPLICA STATUS");
  CHECK_FALSE(d.replica_hint_from_status_variables());
  // Not simulable on MariaDB: its own variables and GTID format.
  CHECK(d.read_only_sql() == "SELECT @@GLOBAL.read_only, 0");
  CHECK(d.identity_sql() == maria().identity_sql());
  CHECK(d.gtid_domain_server_seq());
  CHECK(d.time_limited("SELECT COUNT(*) FROM t", 2000) == "SELECT /*+ MAX_EXECUTION_TIME(2000) */ COUNT(*) FROM t");
  CHECK(d.describe().find("portable path") != std::string::npos);
}

TEST_CASE("dialect: differences name every behaviour that differs, one line each") {
  auto m = maria().differences();
  auto p = maria(true).differences();
  auto y = mysql("8.4.3").differences();
  CHECK(m.size() == 7);
  CHECK(y.size() == 8);  // MySQL adds sql_require_primary_key and GIPK
  CHECK(m[0].find("DELETE ... RETURNING, one pass") != std::string::npos);
  CHECK(p[0].find("locked re-read") != std::string::npos);
  CHECK(y[0].find("locked re-read") != std::string::npos);
  CHECK(m[3].find("SHOW ALL SLAVES STATUS") != std::string::npos);
  CHECK(p[3].find("SHOW REPLICA STATUS") != std::string::npos);
  CHECK(y[3].find("Seconds_Behind_Source") != std::string::npos);
  CHECK(y[6].find("my_row_id") != std::string::npos);
}

TEST_CASE("dialect: information_schema EXTRA values: invisible, generated, GIPK") {
  // MariaDB 10.11.19 (measured on this machine): VIRTUAL says "VIRTUAL GENERATED", PERSISTENT and STORED say
  // "STORED GENERATED", INVISIBLE "INVISIBLE", DEFAULT CURRENT_TIMESTAMP "".
  CHECK(Dialect::column_generated("VIRTUAL GENERATED"));
  CHECK(Dialect::column_generated("STORED GENERATED"));
  CHECK(Dialect::column_invisible("INVISIBLE"));
  CHECK_FALSE(Dialect::column_invisible(""));
  CHECK_FALSE(Dialect::column_generated(""));
  CHECK_FALSE(Dialect::column_generated("auto_increment"));
  CHECK_FALSE(Dialect::column_gipk("id", "auto_increment"));
}

#ifdef GOARCHIVE_FAULT_HOOKS
TEST_CASE("dialect: the portable switch is 0 or 1, read from the environment of a build with the test hooks") {
  using goarchive::db::check_portable_environment;
  using goarchive::db::portable_switch;
  setenv("GOARCHIVE_TEST_PORTABLE", "1", 1);
  CHECK(portable_switch());
  CHECK_NOTHROW(check_portable_environment());
  CHECK(Dialect::connected("10.11.19-MariaDB", 101119).portable());
  setenv("GOARCHIVE_TEST_PORTABLE", "yes", 1);
  CHECK_FALSE(portable_switch());
  CHECK_THROWS_AS(check_portable_environment(), goarchive::ConfigError);
  unsetenv("GOARCHIVE_TEST_PORTABLE");
  CHECK_FALSE(portable_switch());
  CHECK_NOTHROW(check_portable_environment());
  CHECK_FALSE(Dialect::connected("10.11.19-MariaDB", 101119).portable());
}
#endif

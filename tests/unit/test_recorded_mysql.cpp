// Docs-verified, not run against a server: the dialect layer (db/dialect.h), the replication gate and the GTID rules
// (guard/gtid.h) fed MySQL 8.0 / 8.4 and Percona Server answers recorded from their documentation. No MySQL server
// runs on this machine (Debian 12 ships none); each test names where its answer comes from. Test names start with
// "recorded_mysql80:" or "recorded_mysql84:" so that a reader knows these are recorded answers.
#include <doctest/doctest.h>

#include "db/dialect.h"
#include "db/error.h"
#include "guard/gtid.h"
#include "locks/names.h"
#include "replication/gate.h"
#include "schema/catalog.h"
#include "tracking/archive_owner.h"

using goarchive::db::Dialect;
using goarchive::db::PartitionDetach;
using goarchive::guard::mysql_gtid_history_contains;
using goarchive::guard::mysql_gtid_subset;
using goarchive::guard::parse_mysql_gtid_set;
using goarchive::guard::parse_mysql_gtid_uuids;
using goarchive::guard::same_source_data;
using goarchive::guard::SourceIdentity;
using goarchive::replication::evaluate;
using goarchive::replication::StatusRow;

namespace {
Dialect server(const char* version, unsigned long number) { return Dialect::from_server(version, number, false); }
}  // namespace

// VERSION() of Oracle's MySQL is major.minor.patch (MySQL 8.0.40 and 8.4.3 release notes:
// https://dev.mysql.com/doc/relnotes/mysql/8.0/en/news-8-0-40.html, https://dev.mysql.com/doc/relnotes/mysql/8.4/en/news-8-4-3.html);
// mysql_get_server_version() is major*10000 + minor*100 + patch (https://dev.mysql.com/doc/c-api/8.0/en/mysql-get-server-version.html).
TEST_CASE("recorded_mysql80: VERSION() 8.0.40 takes MySQL's paths") {
  Dialect d = server("8.0.40", 80040);
  CHECK_FALSE(d.mariadb());
  CHECK_FALSE(d.percona());
  CHECK(std::string(d.flavor_name()) == "mysql");
  CHECK(d.describe() == "MySQL 8.0.40");
  CHECK_FALSE(d.delete_returning());
  CHECK(d.partition_detach() == PartitionDetach::exchange);
  CHECK_FALSE(d.bulk_insert());
  // SHOW REPLICA STATUS from 8.0.22 (https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html).
  CHECK(d.replica_status_sql() == "SHOW REPLICA STATUS");
  CHECK(d.replica_status_fallback_sql() == "SHOW SLAVE STATUS");
  CHECK_FALSE(d.replica_hint_from_status_variables());
  CHECK(d.read_only_sql() == "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only");
  CHECK(d.identity_sql() == "SELECT @@server_id, @@server_uuid, @@gtid_mode, @@gtid_executed");
  CHECK(d.has_server_uuid());
  CHECK_FALSE(d.gtid_domain_server_seq());
  CHECK(d.time_limited("SELECT COUNT(*) FROM t", 2000) == "SELECT /*+ MAX_EXECUTION_TIME(2000) */ COUNT(*) FROM t");
  CHECK(d.json_binary());
  CHECK(Dialect::json_text_may_change(server("10.11.19-MariaDB", 101119), d));
  CHECK_FALSE(Dialect::json_text_may_change(d, server("10.11.19-MariaDB", 101119)));
  // "-log" and "-debug" suffixes are Oracle builds, not Percona.
  CHECK_FALSE(server("8.0.40-log", 0).percona());
  CHECK(server("8.0.40-log", 0).version_number() == 80040);
  CHECK(server("8.0.40-debug", 0).describe() == "MySQL 8.0.40");
}

// Before 8.0.22 only SHOW SLAVE STATUS exists (https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html:
// "In releases before MySQL 8.0.22, use SHOW SLAVE STATUS"); 8.4 removed it
// (https://dev.mysql.com/doc/refman/8.4/en/show-replica-status.html has SHOW REPLICA STATUS only).
TEST_CASE("recorded_mysql84: the replica-status statement by version") {
  CHECK(server("8.0.21", 80021).replica_status_sql() == "SHOW SLAVE STATUS");
  CHECK(server("8.0.21", 80021).replica_status_fallback_sql().empty());
  CHECK(server("8.4.3", 80403).replica_status_sql() == "SHOW REPLICA STATUS");
  CHECK(server("8.4.3", 80403).replica_status_fallback_sql().empty());
  CHECK(server("8.4.3", 80403).describe() == "MySQL 8.4.3");
}

// Percona Server's VERSION() carries its build after the upstream version: "8.0.39-30", "8.4.3-3" (release notes:
// https://docs.percona.com/percona-server/8.0/release-notes/8.0.39-30.html,
// https://docs.percona.com/percona-server/8.4/release-notes/8.4.3-3.html).
TEST_CASE("recorded_mysql80: Percona Server 8.0.39-30 and 8.4.3-3 are MySQL") {
  Dialect p80 = server("8.0.39-30", 80039), p84 = server("8.4.3-3", 80403);
  for (const Dialect& d : {p80, p84}) {
    CHECK(d.percona());
    CHECK_FALSE(d.mariadb());
    CHECK(std::string(d.flavor_name()) == "mysql");
    CHECK_FALSE(d.delete_returning());
    CHECK(d.replica_status_sql() == "SHOW REPLICA STATUS");
  }
  CHECK(p80.describe() == "Percona Server 8.0.39-30");
  CHECK(server("8.0.39-30", 0).version_number() == 80039);
}

// Error numbers of MySQL's server error reference (https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html):
// 3057 ER_USER_LOCK_WRONG_NAME, 3058 ER_USER_LOCK_DEADLOCK, 3105 ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN,
// 3750 ER_TABLE_WITHOUT_PK, 4031 ER_CLIENT_INTERACTION_TIMEOUT (8.0.24+); GET_LOCK's 64-character limit
// (https://dev.mysql.com/doc/refman/8.0/en/locking-functions.html). MariaDB's, measured on 10.11.19 here: a 193-byte
// name is 1059, a user-lock deadlock 1213 (mariadb-facts §0.3); 1906 from `perror 1906`.
TEST_CASE("recorded_mysql80: lock, column and key error numbers") {
  Dialect my = server("8.0.40", 80040), maria = server("10.11.19-MariaDB-0+deb12u1", 101119);
  CHECK(my.lock_name_error() == 3057);
  CHECK(my.lock_deadlock_error() == 3058);
  CHECK(my.generated_write_error() == 3105);
  CHECK(my.require_primary_key_error() == 3750);
  CHECK(my.idle_disconnect_error() == 4031);
  CHECK(my.lock_name_limit() == 64);
  CHECK(maria.lock_name_error() == 1059);
  CHECK(maria.lock_deadlock_error() == 1213);
  CHECK(maria.generated_write_error() == 1906);
  CHECK(maria.idle_disconnect_error() == 0);
  // A lock deadlock is retried and an idle disconnect is a lost session (its named locks gone), on either server.
  CHECK(goarchive::db::is_retryable(my.lock_deadlock_error()));
  CHECK(goarchive::db::is_retryable(maria.lock_deadlock_error()));
  CHECK(goarchive::db::is_connection_lost(my.idle_disconnect_error()));
  CHECK_FALSE(goarchive::db::is_retryable(my.lock_name_error()));
  // Every lock name goarchive takes fits MySQL's limit.
  using goarchive::locks::client_name;
  using goarchive::locks::LockKind;
  for (LockKind k : {LockKind::schema, LockKind::job, LockKind::table}) {
    CHECK(client_name(k, std::string(300, 'x'), std::string(300, 'y')).size() <= my.lock_name_limit());
  }
}

// Generated invisible primary keys (MySQL 8.0.30+): SHOW CREATE TABLE shows
// "`my_row_id` bigint unsigned NOT NULL AUTO_INCREMENT /*!80023 INVISIBLE */" and PRIMARY KEY (`my_row_id`)
// (https://dev.mysql.com/doc/refman/8.0/en/create-table-gipks.html); information_schema.COLUMNS.EXTRA names an
// invisible column INVISIBLE (https://dev.mysql.com/doc/refman/8.0/en/invisible-columns.html, "Invisible Column
// Metadata"), so the GIPK's EXTRA is "auto_increment INVISIBLE"; a generated column's EXTRA is "VIRTUAL GENERATED"
// or "STORED GENERATED", and a DEFAULT CURRENT_TIMESTAMP column's "DEFAULT_GENERATED"
// (https://dev.mysql.com/doc/refman/8.0/en/information-schema-columns-table.html).
TEST_CASE("recorded_mysql80: information_schema rows of invisible, generated and GIPK columns") {
  CHECK(Dialect::column_gipk("my_row_id", "auto_increment INVISIBLE"));
  CHECK(Dialect::column_invisible("auto_increment INVISIBLE"));
  CHECK_FALSE(Dialect::column_generated("auto_increment INVISIBLE"));
  CHECK_FALSE(Dialect::column_gipk("my_row_id", "auto_increment"));  // a visible column of that name is data
  CHECK_FALSE(Dialect::column_gipk("id", "auto_increment INVISIBLE"));
  CHECK(Dialect::column_invisible("INVISIBLE"));
  CHECK(Dialect::column_generated("VIRTUAL GENERATED"));
  CHECK(Dialect::column_generated("STORED GENERATED"));
  CHECK(Dialect::column_generated("VIRTUAL GENERATED INVISIBLE"));
  CHECK_FALSE(Dialect::column_generated("DEFAULT_GENERATED"));
  CHECK_FALSE(Dialect::column_generated("DEFAULT_GENERATED on update CURRENT_TIMESTAMP"));
  CHECK(server("8.0.30", 80030).generates_invisible_primary_key());
  CHECK_FALSE(server("8.0.29", 80029).generates_invisible_primary_key());
  CHECK(server("8.4.3", 80403).differences()[6].find("my_row_id") != std::string::npos);
}

// The SHOW REPLICA STATUS example of the MySQL 8.4 manual (https://dev.mysql.com/doc/refman/8.4/en/show-replica-status.html):
// Source_Host 127.0.0.1, Source_Port 13000, Replica_IO_Running Yes, Replica_SQL_Running Yes, Seconds_Behind_Source 0,
// Channel_Name empty (the default channel). Multi-source channels are named (Channel_Name, "FOR CHANNEL",
// https://dev.mysql.com/doc/refman/8.4/en/replication-multi-source-monitoring.html).
TEST_CASE("recorded_mysql84: SHOW REPLICA STATUS rows through the gate") {
  auto row = [](const char* io, const char* sql, const char* lag, const char* channel) {
    return StatusRow{{"Replica_IO_State", std::string("Waiting for source to send event")},
                     {"Source_Host", std::string("127.0.0.1")},
                     {"Source_Port", std::string("13000")},
                     {"Replica_IO_Running", std::string(io)},
                     {"Replica_SQL_Running", std::string(sql)},
                     {"Seconds_Behind_Source", lag ? std::optional<std::string>(lag) : std::nullopt},
                     {"Channel_Name", std::string(channel)}};
  };
  CHECK_FALSE(evaluate("r1", {row("Yes", "Yes", "0", "")}, 10).has_value());
  auto lag = evaluate("r1", {row("Yes", "Yes", "0", "source_1"), row("Yes", "Yes", "42", "source_2")}, 10);
  REQUIRE(lag);
  CHECK(*lag == "replica lag 42s on r1 channel 'source_2' (max 10s)");
  auto stopped = evaluate("r1", {row("Yes", "No", nullptr, "source_1")}, 10);
  REQUIRE(stopped);
  CHECK(*stopped == "replica r1 channel 'source_1' SQL thread is not running");
  auto unknown = evaluate("r1", {row("Yes", "Yes", nullptr, "")}, 10);
  REQUIRE(unknown);
  CHECK(*unknown == "replica r1 lag is unknown (NULL)");
}

// GTID sets of the MySQL manual, "GTID Format and Storage"
// (https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html; tags since 8.3, WL#15294
// https://dev.mysql.com/worklog/task/?id=15294): "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-3:11:47-49",
// "...:Domain_1:1-3:11:47-49", "...:Domain_1:1-3:15-21, ...:Domain_2:8-52", and a replica's gtid_executed
// "2174B383-5441-11E8-B90A-C80AA9429562:1-3, 24DA167-0C0C-11E8-8442-00059A3C7B00:1-19" (the manual's second UUID
// has 7 hex digits in its first group: a typo the parser refuses).
TEST_CASE("recorded_mysql84: tagged and untagged GTID sets, subset and same source") {
  const std::string uuid = "3E11FA47-71CA-11E1-9E33-C80AA9429562";
  auto plain = parse_mysql_gtid_set(uuid + ":1-3:11:47-49");
  REQUIRE(plain);
  REQUIRE(plain->size() == 3);
  CHECK((*plain)[0].uuid == "3e11fa47-71ca-11e1-9e33-c80aa9429562");
  CHECK((*plain)[0].tag.empty());
  CHECK((*plain)[2].first == 47);
  CHECK((*plain)[2].last == 49);
  auto tagged = parse_mysql_gtid_set(uuid + ":Domain_1:1-3:15-21, " + uuid + ":Domain_2:8-52");
  REQUIRE(tagged);
  REQUIRE(tagged->size() == 3);
  CHECK((*tagged)[0].tag == "domain_1");
  CHECK((*tagged)[2].tag == "domain_2");
  CHECK((*tagged)[2].first == 8);
  CHECK_FALSE(parse_mysql_gtid_set("2174B383-5441-11E8-B90A-C80AA9429562:1-3, 24DA167-0C0C-11E8-8442-00059A3C7B00:1-19"));
  CHECK(parse_mysql_gtid_set("")->empty());
  CHECK_FALSE(parse_mysql_gtid_set(uuid + ":0"));
  CHECK_FALSE(parse_mysql_gtid_set(uuid + ":5-3"));
  CHECK_FALSE(parse_mysql_gtid_set(uuid + ":Domain_1"));

  // GTID_SUBSET: a tag is part of the source's identity ("treated as part of the UUID").
  CHECK(mysql_gtid_subset(uuid + ":1-3", uuid + ":1-3:11:47-49"));
  CHECK(mysql_gtid_subset(uuid + ":2:47-48", uuid + ":1-3:11:47-49"));
  CHECK_FALSE(mysql_gtid_subset(uuid + ":1-4", uuid + ":1-3:11:47-49"));
  CHECK(mysql_gtid_subset(uuid + ":Domain_1:16-20", uuid + ":Domain_1:1-3:15-21"));
  CHECK(mysql_gtid_subset(uuid + ":domain_1:16-20", uuid + ":Domain_1:1-3:15-21"));  // tags ignore case
  CHECK_FALSE(mysql_gtid_subset(uuid + ":Domain_2:16", uuid + ":Domain_1:1-3:15-21"));
  CHECK_FALSE(mysql_gtid_subset(uuid + ":16", uuid + ":Domain_1:1-3:15-21"));
  CHECK(mysql_gtid_subset(uuid + ":1-10", uuid + ":1-5," + uuid + ":6-10"));  // adjacent intervals join
  CHECK(mysql_gtid_subset("", uuid + ":1"));

  // Same source: a replica whose gtid_executed holds the source's tagged transactions holds its data.
  CHECK(parse_mysql_gtid_uuids(uuid + ":Domain_1:1-3:15-21") ==
        std::vector<std::string>{"3e11fa47-71ca-11e1-9e33-c80aa9429562"});
  SourceIdentity source{"mysql", "10.0.0.1", 3306, "shop", 1, std::nullopt, uuid, uuid + ":Domain_1:1-3", true};
  SourceIdentity replica{"mysql", "10.0.0.2", 3306, "shop", 2, std::nullopt, "2174B383-5441-11E8-B90A-C80AA9429562",
                         "2174B383-5441-11E8-B90A-C80AA9429562:1-3, " + uuid + ":Domain_1:1-3", true};
  CHECK(same_source_data(replica, source));
  SourceIdentity other{"mysql", "10.0.0.3", 3306, "shop", 3, std::nullopt, "2174B383-5441-11E8-B90A-C80AA9429562",
                       "2174B383-5441-11E8-B90A-C80AA9429562:1-3", true};
  CHECK_FALSE(same_source_data(other, source));
}

// A failover between sibling replicas (MySQL 8.4 manual, "Switching Sources During Failover",
// https://dev.mysql.com/doc/refman/8.4/en/replication-solutions-switch.html, with GTID auto-positioning): both
// replicas apply the primary's transactions and write none of their own, so neither's server_uuid is in the
// other's gtid_executed; only the histories tell that they hold the same data. The sets are the manual's tagged
// and untagged examples ("GTID Format and Storage", https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html).
TEST_CASE("recorded_mysql84: a sibling replica's GTID history holds the recorded source's (GTID_SUBSET)") {
  const std::string primary = "3E11FA47-71CA-11E1-9E33-C80AA9429562";
  const std::string recorded = primary + ":1-3:11:47-49, " + primary + ":Domain_1:1-3:15-21";
  // Later, with more of the primary's transactions applied, tagged ones among them; case and spacing as printed.
  const std::string later = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-60,\n" + primary + ":Domain_1:1-3:15-21:22-30, " +
                            primary + ":Domain_2:8-52";
  CHECK(mysql_gtid_history_contains(later, recorded));
  CHECK_FALSE(mysql_gtid_history_contains(recorded, later));
  CHECK(mysql_gtid_history_contains(recorded, recorded));
  // One tagged transaction short (Domain_1:16 missing): not the whole history.
  CHECK_FALSE(mysql_gtid_history_contains(primary + ":1-60," + primary + ":Domain_1:1-3:17-21", recorded));
  // The same numbers under another tag are other transactions.
  CHECK_FALSE(mysql_gtid_history_contains(primary + ":1-60," + primary + ":Domain_2:1-3:15-21", recorded));
  // An empty history (GTIDs off, a fresh server) and a malformed one say nothing.
  CHECK_FALSE(mysql_gtid_history_contains(later, ""));
  CHECK_FALSE(mysql_gtid_history_contains(later, primary + ":Domain_1"));
  CHECK_FALSE(mysql_gtid_history_contains("garbage", recorded));

  // The unfinished-work guard: the other job's recorded source is replica A, this run's is replica B.
  const std::string a = "2174B383-5441-11E8-B90A-C80AA9429562", b = "4a2b5c6d-0000-11ef-8000-000000000002";
  SourceIdentity replica_a{"mysql", "10.0.0.2", 3306, "shop", 2, std::nullopt, a, recorded, true};
  SourceIdentity replica_b{"mysql", "10.0.0.3", 3306, "shop", 3, std::nullopt, b, later, true};
  CHECK(same_source_data(replica_b, replica_a));
  // Without the recorded history (a registry that records only the UUID) the sibling is not seen.
  SourceIdentity uuid_only = replica_a;
  uuid_only.gtid_state.clear();
  CHECK_FALSE(same_source_data(replica_b, uuid_only));
  // An unrelated server whose history lacks the primary's transactions is other data.
  SourceIdentity unrelated{"mysql", "10.0.0.9", 3306, "shop", 9, std::nullopt, b, b + ":1-500", true};
  CHECK_FALSE(same_source_data(unrelated, replica_a));

  // The archive owner record keeps the claiming server's gtid_executed: a run from the sibling writes the same
  // archive; an unrelated shard of the same database name is refused.
  auto mysql_server = [](const std::string& uuid, unsigned long long id, const std::string& executed) {
    goarchive::schema::ServerIdentity s;
    s.mariadb = false;
    s.server_uuid = uuid;
    s.server_id = id;
    s.hostname = "db-" + std::to_string(id);
    s.port = 3306;
    s.datadir = "/var/lib/mysql/";
    s.gtid_state = executed;
    return s;
  };
  auto rel = goarchive::schema::relate(mysql_server(a, 2, recorded), "shop", mysql_server(b, 3, later), "shop");
  CHECK_FALSE(rel.same_server);
  CHECK(rel.replicated);
  CHECK(rel.same_data);
  goarchive::tracking::ArchiveOwner owner{"goarchive", mysql_server(a, 2, recorded), "shop"};
  goarchive::tracking::ArchiveOwner sibling{"goarchive", mysql_server(b, 3, later), "shop"};
  goarchive::tracking::ArchiveOwner shard{"goarchive", mysql_server(b, 3, b + ":1-500"), "shop"};
  CHECK(goarchive::tracking::owner_problem("shop_archive", owner, sibling) == "");
  CHECK(goarchive::tracking::owner_problem("shop_archive", owner, shard).find("is filled by the runs of source") !=
        std::string::npos);
}

// sql_require_primary_key (MySQL 8.0.13+, https://dev.mysql.com/doc/refman/8.0/en/server-system-variables.html#sysvar_sql_require_primary_key):
// "Unable to create or change a table without a primary key, when the system variable 'sql_require_primary_key' is
// set" is ER_TABLE_WITHOUT_PK, 3750. MariaDB's innodb_force_primary_key refuses with 1173 ER_REQUIRES_PRIMARY_KEY
// ("This table type requires a primary key", measured on 10.11.19 here; test_dialect_errors runs it for real).
TEST_CASE("recorded_mysql80: the setting and error of a required primary key") {
  Dialect my = server("8.0.40", 80040), maria = server("10.11.19-MariaDB-0+deb12u1", 101119);
  CHECK(my.require_primary_key_error() == 3750);
  CHECK(std::string(my.require_primary_key_setting()) == "sql_require_primary_key");
  CHECK(maria.require_primary_key_error() == 1173);
  CHECK(std::string(maria.require_primary_key_setting()) == "innodb_force_primary_key");
  // The portable switch changes choices, never what the server is: MariaDB's error and setting stay.
  Dialect portable = Dialect::from_server("10.11.19-MariaDB-0+deb12u1", 101119, true);
  CHECK(portable.require_primary_key_error() == 1173);
  CHECK(portable.generated_write_error() == 1906);
}

// JSON storage: MariaDB's JSON is "an alias for LONGTEXT COLLATE utf8mb4_bin" with a json_valid CHECK
// (https://mariadb.com/kb/en/json-data-type/; measured on 10.11.19 here: COLUMN_TYPE "longtext", SHOW CREATE TABLE
// "`j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`))"); MySQL's is
// COLUMN_TYPE "json", stored binary and printed normalized ("MySQL normalizes JSON ... duplicate keys ... the last
// one wins", https://dev.mysql.com/doc/refman/8.0/en/json.html#json-normalization).
TEST_CASE("recorded_mysql80: a MariaDB JSON column is never archived into MySQL's json") {
  std::string into_mysql = Dialect::json_storage_difference("longtext", "json");
  CHECK(into_mysql.find("normalized form (spacing, key order, duplicate keys, number forms)") != std::string::npos);
  CHECK(into_mysql.find("make the archive column LONGTEXT as the source's (goarchive schema creates it so") !=
        std::string::npos);
  CHECK(Dialect::json_storage_difference("json", "longtext").find("archive it into a MySQL server, in a json column") !=
        std::string::npos);
  CHECK(Dialect::json_storage_difference("longtext", "longtext").empty());  // MariaDB -> MariaDB: byte for byte
  CHECK(Dialect::json_storage_difference("json", "JSON").empty());          // MySQL -> MySQL
  CHECK(Dialect::json_storage_difference("int(11)", "bigint(20)").empty());  // another difference: not JSON's
  // validate -v says it for each server.
  CHECK(server("8.4.3", 80403).differences().back().find("never into a json column") != std::string::npos);
  CHECK(server("10.11.19-MariaDB", 101119).differences().back().find("preflight refuses one") != std::string::npos);
}

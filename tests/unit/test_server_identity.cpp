// Whether a destination is the source's own data (schema::relate) and whether a job's recorded source is this
// run's (tracking::same_recorded_source), on recorded MariaDB 10.11 and MySQL 8.0 server values.
#include <doctest/doctest.h>

#include "identities.h"
#include "schema/catalog.h"
#include "tracking/registry.h"

using goarchive::schema::relate;
using goarchive::schema::ServerIdentity;

using goarchive::test::maria;

namespace {

ServerIdentity mysql(const std::string& uuid, unsigned long long id, const std::string& executed) {
  ServerIdentity s;
  s.mariadb = false;
  s.server_uuid = uuid;
  s.server_id = id;
  s.hostname = "db";
  s.port = 3306;
  s.datadir = "/var/lib/mysql/";
  s.gtid_state = executed;
  return s;
}

}  // namespace

TEST_CASE("server identity: the same MariaDB server reached two ways is the source database itself") {
  auto src = maria(1, 27306, "1-1-1609,");
  auto same = src;  // what the socket and 127.0.0.1 connections both read
  auto rel = relate(src, "shop", same, "shop");
  CHECK(rel.same_server);
  CHECK(rel.same_data);
  // Another database on the same server is a fine archive.
  rel = relate(src, "shop", same, "shop_archive");
  CHECK(rel.same_server);
  CHECK_FALSE(rel.same_data);
  // Names differ only in case: the same database only where the server folds names.
  CHECK_FALSE(relate(src, "shop", same, "Shop").same_data);
  same.case_insensitive_names = true;
  CHECK(relate(src, "shop", same, "Shop").same_data);
}

TEST_CASE("server identity: a MariaDB replica and the server a source replicates from share its data") {
  auto src = maria(1, 27306, "1-1-1609,");
  auto replica = maria(2, 27307, "1-1-1609,2-2-76,1-1-1609");
  auto dest = maria(3, 27308, "3-3-12,");
  auto rel = relate(src, "shop", replica, "shop");
  CHECK_FALSE(rel.same_server);
  CHECK(rel.replicated);
  CHECK(rel.same_data);
  CHECK_FALSE(relate(src, "shop", replica, "shop_archive").same_data);
  // The other way round: the source is the replica, the destination the server it replicates from.
  CHECK(relate(replica, "shop", src, "shop").same_data);
  // An unrelated archive server with the same database name.
  rel = relate(src, "shop", dest, "shop");
  CHECK_FALSE(rel.same_server);
  CHECK_FALSE(rel.replicated);
  CHECK_FALSE(rel.same_data);
  // Binlog off on both (empty GTID state): nothing says they replicate.
  CHECK_FALSE(relate(maria(1, 1, ","), "shop", maria(2, 2, ","), "shop").same_data);
  // Two servers with one server_id (the default 1) do not replicate from each other; their GTIDs say nothing.
  CHECK_FALSE(relate(maria(1, 1, "0-1-5,"), "shop", maria(1, 2, "0-1-9,"), "shop").same_data);
}

TEST_CASE("server identity: MySQL servers by server_uuid and gtid_executed") {
  const std::string a = "3E11FA47-71CA-11E1-9E33-C80AA9429562", b = "4a2b5c6d-0000-11ef-8000-000000000002";
  auto src = mysql(a, 1, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77");
  auto same = src;
  same.hostname = "another-name";  // the UUID decides
  CHECK(relate(src, "shop", same, "shop").same_server);
  auto replica = mysql(b, 2, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77,\n4a2b5c6d-0000-11ef-8000-000000000002:1-3");
  CHECK(relate(src, "shop", replica, "shop").same_data);
  CHECK(relate(replica, "shop", src, "shop").same_data);
  auto other = mysql("5b3c6d7e-0000-11ef-8000-000000000003", 1, "");
  CHECK_FALSE(relate(src, "shop", other, "shop").same_data);
}

TEST_CASE("recorded source: the job's unfinished work belongs to the source it recorded") {
  goarchive::tracking::RecordedSource rec;
  rec.source.flavor = "mariadb";
  rec.source.host = "127.0.0.1";
  rec.source.port = 3306;
  rec.source.database = "shop";
  rec.source.server_id = 1;
  auto now = rec.source;
  CHECK(goarchive::tracking::same_recorded_source(rec, now));
  now.database = "shop_b";
  CHECK_FALSE(goarchive::tracking::same_recorded_source(rec, now));
  now = rec.source;
  now.server_id = 2;  // the address now reaches another server
  CHECK_FALSE(goarchive::tracking::same_recorded_source(rec, now));
  now = rec.source;
  now.port = 3307;
  CHECK_FALSE(goarchive::tracking::same_recorded_source(rec, now));
  now = rec.source;
  now.host = "/run/mysqld/mysqld.sock";  // the same server under another address is another root scope
  CHECK_FALSE(goarchive::tracking::same_recorded_source(rec, now));
}

namespace {

goarchive::db::RowSet status_rows(const std::vector<std::string>& names, const std::vector<std::vector<std::string>>& rows) {
  goarchive::db::RowSet r;
  r.set_columns(names);
  for (const auto& row : rows) {
    for (const auto& v : row) r.push(v);
  }
  return r;
}

}  // namespace

TEST_CASE("replica role: the channels of SHOW ALL SLAVES STATUS (MariaDB) name the primary each replicates from") {
  // As the replica of scripts/servers.sh reports itself (a subset of the columns, in the server's order).
  auto r = status_rows({"Connection_name", "Slave_SQL_State", "Master_Host", "Master_User", "Master_Port",
                        "Slave_IO_Running", "Slave_SQL_Running"},
                       {{"", "Slave has read all relay log", "127.0.0.1", "repl", "32306", "Yes", "Yes"}});
  goarchive::schema::ReplicaRole role;
  role.channels = goarchive::schema::replica_channels(r);
  REQUIRE(role.channels.size() == 1);
  CHECK(role.replica());
  CHECK(role.primaries() == "127.0.0.1:32306");
  CHECK(role.state() == "replication running");
  // Stopped, and a second named connection.
  r = status_rows({"Connection_name", "Master_Host", "Master_Port", "Slave_IO_Running", "Slave_SQL_Running"},
                  {{"", "db1", "3306", "No", "No"}, {"east", "db2", "3307", "Yes", "No"}});
  role.channels = goarchive::schema::replica_channels(r);
  CHECK(role.primaries() == "db1:3306, db2:3307 (connection 'east')");
  CHECK(role.state() == "replication configured, not running");
  // Not a replica: no rows.
  role.channels = goarchive::schema::replica_channels(status_rows({"Connection_name", "Master_Host"}, {}));
  CHECK_FALSE(role.replica());
  role.replicates_unnamed = true;  // the account could not read the status, the status variables say it replicates
  CHECK(role.replica());
  CHECK(role.primaries().find("SLAVE MONITOR") != std::string::npos);
}

TEST_CASE("replica role: MySQL 8 SHOW REPLICA STATUS columns, IPv6 primary") {
  auto r = status_rows({"Replica_IO_State", "Source_Host", "Source_Port", "Replica_IO_Running", "Replica_SQL_Running",
                        "Channel_Name"},
                       {{"Waiting for source to send event", "fd00::1", "3306", "Yes", "Yes", ""}});
  goarchive::schema::ReplicaRole role;
  role.channels = goarchive::schema::replica_channels(r);
  CHECK(role.primaries() == "[fd00::1]:3306");
  CHECK(role.state() == "replication running");
}

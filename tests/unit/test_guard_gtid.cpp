// Same source data (seed 001, DESIGN.md §6) on recorded MariaDB and MySQL GTID values.
#include <doctest/doctest.h>

#include "guard/gtid.h"

using goarchive::guard::parse_mariadb_gtids;
using goarchive::guard::parse_mysql_gtid_uuids;
using goarchive::guard::same_source_data;
using goarchive::guard::SourceIdentity;

namespace {

SourceIdentity mariadb(const std::string& host, unsigned port, unsigned long long server_id, unsigned long long domain,
                       const std::string& state, bool known = true) {
  SourceIdentity s;
  s.flavor = "mariadb";
  s.host = host;
  s.port = port;
  s.database = "shop";
  s.server_id = server_id;
  if (known) s.gtid_domain = domain;
  s.gtid_state = state;
  s.gtid_known = known;
  return s;
}

SourceIdentity mysql(const std::string& host, const std::string& uuid, const std::string& executed, bool known = true) {
  SourceIdentity s;
  s.flavor = "mysql";
  s.host = host;
  s.port = 3306;
  s.database = "shop";
  s.server_id = 1;
  s.server_uuid = uuid;
  s.gtid_state = executed;
  s.gtid_known = known;
  return s;
}

}  // namespace

TEST_CASE("gtid: MariaDB lists parse, bad entries are skipped") {
  // Recorded on MariaDB 10.11: @@gtid_binlog_state after writes with two server ids in domain 3 and one in 9.
  auto g = parse_mariadb_gtids("3-33-2,3-3-3,9-3-1");
  REQUIRE(g.size() == 3);
  CHECK(g[0].domain == 3);
  CHECK(g[0].server_id == 33);
  CHECK(g[0].seq == 2);
  CHECK(g[2].domain == 9);
  CHECK(parse_mariadb_gtids("").empty());  // binlog off: every GTID variable is ''
  CHECK(parse_mariadb_gtids(" 1-1-6 ,\n2-2-1").size() == 2);
  CHECK(parse_mariadb_gtids("1-1,x-1-2,1-1-2-3,1-1-6").size() == 1);
}

TEST_CASE("gtid: MySQL GTID sets parse into server UUIDs") {
  // Recorded form of @@gtid_executed (MySQL 8.0 manual): uuid:interval[:interval], comma and newline separated.
  auto u = parse_mysql_gtid_uuids(
      "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n2174B383-5441-11E8-B90A-C80AA9429562:1-3");
  REQUIRE(u.size() == 2);
  CHECK(u[0] == "3e11fa47-71ca-11e1-9e33-c80aa9429562");
  CHECK(u[1] == "2174b383-5441-11e8-b90a-c80aa9429562");
  CHECK(parse_mysql_gtid_uuids("").empty());
  CHECK(parse_mysql_gtid_uuids("not-a-uuid:1-2").empty());
}

TEST_CASE("gtid: the same server is the same source data") {
  auto a = mariadb("127.0.0.1", 23306, 1, 1, "1-1-6");
  CHECK(same_source_data(a, a));
}

TEST_CASE("gtid: a MariaDB replica holds its source's transactions") {
  // Source: server_id 1, domain 1, @@gtid_binlog_state 1-1-6. Replica: @@gtid_binlog_state 1-1-6,2-2-1 and
  // @@gtid_slave_pos 1-1-6 (recorded, mariadb-facts C3).
  auto source = mariadb("127.0.0.1", 23306, 1, 1, "1-1-6,");
  auto replica = mariadb("127.0.0.1", 23307, 2, 2, "1-1-6,2-2-1,1-1-6");
  CHECK(same_source_data(replica, source));   // a job stopped on the source blocks a run against the replica
  CHECK_FALSE(same_source_data(source, replica));  // the limit: a job on a replica of this source is not seen
  // log_slave_updates off: only @@gtid_slave_pos carries the source's id.
  auto replica_no_lsu = mariadb("127.0.0.1", 23307, 2, 2, "2-2-1,1-1-7");
  CHECK(same_source_data(replica_no_lsu, source));
}

TEST_CASE("gtid: the source's server id in another domain does not count") {
  auto source = mariadb("10.0.0.1", 3306, 1, 1, "1-1-6,");
  auto other = mariadb("10.0.0.2", 3306, 2, 2, "5-1-9,2-2-4");  // server id 1 but in domain 5
  CHECK_FALSE(same_source_data(other, source));
}

TEST_CASE("gtid: unrelated servers with GTID on are different source data") {
  auto a = mariadb("10.0.0.1", 3306, 1, 1, "1-1-6,");
  auto b = mariadb("10.0.0.2", 3306, 2, 2, "2-2-9,");
  CHECK_FALSE(same_source_data(a, b));
  CHECK_FALSE(same_source_data(b, a));
}

TEST_CASE("gtid: where a server cannot tell, the same database name counts as one") {
  // Binlog off on this server (every GTID variable ''): same database name on any server is the same data.
  auto self = mariadb("10.0.0.3", 3306, 4, 0, ",", false);
  auto other = mariadb("10.0.0.1", 3306, 1, 1, "1-1-6,");
  CHECK(same_source_data(self, other));
  other.database = "shop_eu";
  CHECK_FALSE(same_source_data(self, other));
  // MySQL with gtid_mode not ON, or a Group Replication member: cannot tell either.
  auto my_self = mysql("10.0.1.1", "2174b383-5441-11e8-b90a-c80aa9429562", "", false);
  auto my_other = mysql("10.0.1.2", "3e11fa47-71ca-11e1-9e33-c80aa9429562", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5");
  CHECK(same_source_data(my_self, my_other));
}

TEST_CASE("gtid: a MySQL server whose gtid_executed holds the other's UUID is the same source data") {
  auto source = mysql("10.0.1.1", "3E11FA47-71CA-11E1-9E33-C80AA9429562", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5");
  auto promoted = mysql("10.0.1.2", "2174b383-5441-11e8-b90a-c80aa9429562",
                        "2174B383-5441-11E8-B90A-C80AA9429562:1-3,\n3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5");
  CHECK(same_source_data(promoted, source));
  CHECK_FALSE(same_source_data(source, promoted));
  auto stranger = mysql("10.0.1.3", "aaaaaaaa-5441-11e8-b90a-c80aa9429562", "AAAAAAAA-5441-11E8-B90A-C80AA9429562:1-9");
  CHECK_FALSE(same_source_data(stranger, source));
}

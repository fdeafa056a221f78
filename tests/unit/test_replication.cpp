// Replication gating decisions on recorded SHOW ALL SLAVES STATUS (MariaDB) and SHOW REPLICA STATUS (MySQL) rows.
#include <doctest/doctest.h>

#include "replication/gate.h"

using goarchive::replication::evaluate;
using goarchive::replication::StatusRow;

namespace {

StatusRow mariadb_row(const char* io, const char* sql, const char* lag, const char* name = "") {
  return {{"Connection_name", std::string(name)},
          {"Slave_IO_Running", std::string(io)},
          {"Slave_SQL_Running", std::string(sql)},
          {"Seconds_Behind_Master", lag ? std::optional<std::string>(lag) : std::nullopt},
          {"Using_Gtid", std::string("Slave_Pos")}};
}

StatusRow mysql_row(const char* io, const char* sql, const char* lag, const char* channel = "") {
  return {{"Replica_IO_Running", std::string(io)},
          {"Replica_SQL_Running", std::string(sql)},
          {"Seconds_Behind_Source", lag ? std::optional<std::string>(lag) : std::nullopt},
          {"Channel_Name", std::string(channel)}};
}

}  // namespace

TEST_CASE("replication: a healthy MariaDB replica does not hold") {
  CHECK_FALSE(evaluate("r1", {mariadb_row("Yes", "Yes", "0")}, 10).has_value());
  CHECK_FALSE(evaluate("r1", {mariadb_row("Yes", "Yes", "10")}, 10).has_value());
}

TEST_CASE("replication: lag above the limit holds and names replica and lag") {
  auto why = evaluate("r1", {mariadb_row("Yes", "Yes", "42")}, 10);
  REQUIRE(why);
  CHECK(why->find("replica lag 42s") != std::string::npos);
  CHECK(why->find("r1") != std::string::npos);
}

TEST_CASE("replication: stopped threads and NULL lag hold") {
  auto sql = evaluate("r1", {mariadb_row("Yes", "No", nullptr)}, 10);
  REQUIRE(sql);
  CHECK(sql->find("SQL thread is not running") != std::string::npos);
  auto io = evaluate("r1", {mariadb_row("Connecting", "Yes", nullptr)}, 10);
  REQUIRE(io);
  CHECK(io->find("IO thread is not running (Connecting)") != std::string::npos);
  auto null_lag = evaluate("r1", {mariadb_row("Yes", "Yes", nullptr)}, 10);
  REQUIRE(null_lag);
  CHECK(null_lag->find("lag is unknown") != std::string::npos);
}

TEST_CASE("replication: every MariaDB connection name is checked") {
  auto why = evaluate("r1", {mariadb_row("Yes", "Yes", "0", ""), mariadb_row("Yes", "Yes", "99", "eu")}, 10);
  REQUIRE(why);
  CHECK(why->find("channel 'eu'") != std::string::npos);
}

TEST_CASE("replication: a server that is not a replica holds") {
  auto why = evaluate("r1", {}, 10);
  REQUIRE(why);
  CHECK(why->find("not replicating") != std::string::npos);
}

TEST_CASE("replication: MySQL 8.0/8.4 SHOW REPLICA STATUS columns, every channel") {
  CHECK_FALSE(evaluate("m1", {mysql_row("Yes", "Yes", "3")}, 10).has_value());
  auto lag = evaluate("m1", {mysql_row("Yes", "Yes", "3", "a"), mysql_row("Yes", "Yes", "30", "b")}, 10);
  REQUIRE(lag);
  CHECK(lag->find("channel 'b'") != std::string::npos);
  auto stopped = evaluate("m1", {mysql_row("Yes", "No", nullptr)}, 10);
  REQUIRE(stopped);
  CHECK(stopped->find("SQL thread") != std::string::npos);
}

// Unit tests of lib/db/error: classification of server errors.
#include <doctest/doctest.h>

#include <string>

#include "db/error.h"

using goarchive::db::DbError;
using goarchive::db::is_connection_lost;
using goarchive::db::is_retryable;

TEST_CASE("db_error: retryable codes") {
  for (unsigned int code : {1205u, 1213u, 2006u, 2013u}) {
    CAPTURE(code);
    CHECK(is_retryable(code));
  }
  for (unsigned int code : {1062u, 1146u, 1064u, 0u}) {
    CAPTURE(code);
    CHECK_FALSE(is_retryable(code));
  }
}

TEST_CASE("db_error: connection-lost codes") {
  for (unsigned int code : {2006u, 2013u, 4031u, 1927u, 2055u}) {
    CAPTURE(code);
    CHECK(is_connection_lost(code));
  }
  for (unsigned int code : {1205u, 1213u, 1062u}) {
    CAPTURE(code);
    CHECK_FALSE(is_connection_lost(code));
  }
}

TEST_CASE("db_error: the message names code, SQLSTATE, server and tag") {
  DbError e(1205, "HY000", "archiver@db1:3306", "copying orders", "Lock wait timeout exceeded");
  std::string msg = e.what();
  CHECK(msg.find("Lock wait timeout exceeded") != std::string::npos);
  CHECK(msg.find("1205") != std::string::npos);
  CHECK(msg.find("HY000") != std::string::npos);
  CHECK(msg.find("archiver@db1:3306") != std::string::npos);
  CHECK(msg.find("copying orders") != std::string::npos);
  CHECK(e.code() == 1205);
  CHECK(e.sqlstate() == "HY000");
  CHECK(e.server() == "archiver@db1:3306");
  CHECK(e.tag() == "copying orders");
  CHECK(e.retryable());
  CHECK_FALSE(e.connection_lost());
  CHECK_FALSE(e.duplicate_key());
}

TEST_CASE("db_error: exit code 1 and member classifications") {
  DbError dup(1062, "23000", "s", "", "Duplicate entry");
  CHECK(dup.exit_code() == 1);
  CHECK(dup.duplicate_key());
  CHECK_FALSE(dup.retryable());
  CHECK(std::string(dup.what()).find("while") == std::string::npos);  // no tag, no "while"
  DbError lost(2013, "HY000", "s", "t", "Lost connection");
  CHECK(lost.connection_lost());
  CHECK(lost.retryable());
  CHECK(lost.exit_code() == 1);
}

TEST_CASE("db_error: connection-dropping errors are connection loss") {
  // 1153 ER_NET_PACKET_TOO_LARGE and 1927 (connection killed) end the session like 2006/2013/4031.
  for (unsigned int code : {1153u, 1927u, 2006u, 2013u, 4031u}) {
    CAPTURE(code);
    CHECK(is_connection_lost(code));
    CHECK(is_connection_lost(code, "HY000"));
    DbError e(code, "HY000", "s", "", "gone");
    CHECK(e.connection_lost());
  }
  // Any SQLSTATE 08S01 (communication link failure) is connection loss, whatever its code.
  CHECK(is_connection_lost(1047, "08S01"));
  CHECK(DbError(1047, "08S01", "s", "", "unknown command").connection_lost());
  CHECK(DbError(1047, "08S01", "s", "", "unknown command").retryable());
  CHECK_FALSE(is_connection_lost(1047, "08S02"));
  CHECK_FALSE(DbError(1205, "HY000", "s", "", "lock wait").connection_lost());
  // A packet too large is too large again on a new connection: lost, but not worth a retry.
  CHECK_FALSE(is_retryable(1153));
  CHECK_FALSE(DbError(1153, "08S01", "s", "", "Got a packet bigger than 'max_allowed_packet' bytes").retryable());
  CHECK(DbError(1153, "08S01", "s", "", "too large").connection_lost());
}

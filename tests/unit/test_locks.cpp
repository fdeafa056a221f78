// Unit tests of lib/locks/names: lock names of seed 001.
#include <doctest/doctest.h>

#include <string>

#include "locks/names.h"

using goarchive::locks::client_name;
using goarchive::locks::LockKind;
using goarchive::locks::prefix;
using goarchive::locks::server_expression;

TEST_CASE("locks: table lock names match the seed vectors") {
  CHECK(client_name(LockKind::table, "Shop", "Orders") == "goarchive:t:273b481b0b7498df42737825dede866a");
  CHECK(client_name(LockKind::table, "labdb", "t") == "goarchive:t:ebfc37dbd8f06efee0cce987a4e6e3ec");
  CHECK(client_name(LockKind::table, "db", "t\xF0\x9F\x98\x80") == "goarchive:t:9808ce19e337ef4330b8ba48b1074018");
}

TEST_CASE("locks: names are lower-cased and 44 characters long") {
  CHECK(client_name(LockKind::table, "SHOP", "ORDERS") == client_name(LockKind::table, "shop", "orders"));
  for (auto kind : {LockKind::schema, LockKind::job, LockKind::table}) {
    CHECK(client_name(kind, "a", "b").size() == 44);
    CHECK(client_name(kind, std::string(200, 'x'), std::string(200, 'y')).size() == 44);
  }
}

TEST_CASE("locks: the separator keeps (ab, c) and (a, bc) apart") {
  CHECK(client_name(LockKind::table, "ab", "c") != client_name(LockKind::table, "a", "bc"));
}

TEST_CASE("locks: job and schema prefixes") {
  CHECK(std::string(prefix(LockKind::schema)) == "goarchive:s:");
  CHECK(std::string(prefix(LockKind::job)) == "goarchive:j:");
  CHECK(std::string(prefix(LockKind::table)) == "goarchive:t:");
  CHECK(client_name(LockKind::job, "goarchive", "nightly").rfind("goarchive:j:", 0) == 0);
  CHECK(client_name(LockKind::schema, "goarchive", "").rfind("goarchive:s:", 0) == 0);
  // The same pair under another kind differs only in the prefix.
  CHECK(client_name(LockKind::job, "Shop", "Orders").substr(12) ==
        client_name(LockKind::table, "Shop", "Orders").substr(12));
}

TEST_CASE("locks: the schema lock hashes the schema and an empty second string") {
  // SHA-256("goarchive\0") per seed 001: LOWER('<job_schema>'), CHAR(0), LOWER('').
  CHECK(client_name(LockKind::schema, "goarchive", "") == "goarchive:s:5c9cf21547ac5fca3af03b2b36e329d7");
  CHECK(client_name(LockKind::schema, "GoArchive", "") == client_name(LockKind::schema, "goarchive", ""));
  CHECK(client_name(LockKind::schema, "goarchive", "") != client_name(LockKind::schema, "goarchive", "x"));
}

TEST_CASE("locks: server_expression computes the same name in SQL") {
  std::string e = server_expression(LockKind::table, "'shop'", "'orders'");
  CHECK(e == "CONCAT('goarchive:t:', LEFT(SHA2(CONCAT(LOWER('shop'), CHAR(0), LOWER('orders')), 256), 32))");
  CHECK(e.find("SHA2(CONCAT(LOWER('shop'), CHAR(0), LOWER('orders'))") != std::string::npos);
  CHECK(server_expression(LockKind::job, "'s'", "'j'").find("'goarchive:j:'") != std::string::npos);
  CHECK(server_expression(LockKind::schema, "'s'", "''").find("LOWER('')") != std::string::npos);
}

// Unit tests of lib/plan/sql: quoting, literals and generated predicates.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "plan/sql.h"

namespace sql = goarchive::sql;
using namespace std::string_literals;

TEST_CASE("sql: ident wraps in backticks and doubles backticks") {
  CHECK(sql::ident("orders") == "`orders`");
  CHECK(sql::ident("a`b") == "`a``b`");
  CHECK(sql::ident("``") == "``````");
  CHECK(sql::ident("") == "``");
  CHECK(sql::ident("t\xC3\xA9st") == "`t\xC3\xA9st`");
  CHECK(sql::ident("it's \"x\"") == "`it's \"x\"`");
}

TEST_CASE("sql: qualified joins two identifiers with a dot") {
  CHECK(sql::qualified("shop", "orders") == "`shop`.`orders`");
  CHECK(sql::qualified("s`h", "o.r") == "`s``h`.`o.r`");
}

TEST_CASE("sql: quote escapes every special byte") {
  CHECK(sql::quote("abc") == "'abc'");
  CHECK(sql::quote("") == "''");
  CHECK(sql::quote("it's") == "'it\\'s'");
  CHECK(sql::quote("say \"hi\"") == "'say \\\"hi\\\"'");
  CHECK(sql::quote("a\\b") == "'a\\\\b'");
  CHECK(sql::quote("a\nb") == "'a\\nb'");
  CHECK(sql::quote("a\rb") == "'a\\rb'");
  CHECK(sql::quote("a\0b"s) == "'a\\0b'");
  CHECK(sql::quote("a\x1a" "b") == "'a\\Zb'");
  CHECK(sql::quote("\xF0\x9F\x98\x80") == "'\xF0\x9F\x98\x80'");
  CHECK(sql::quote("\\'") == "'\\\\\\''");
}

TEST_CASE("sql: hex_literal") {
  CHECK(sql::hex_literal("") == "''");
  CHECK(sql::hex_literal("abc") == "X'616263'");
  CHECK(sql::hex_literal("\0\xff\x10"s) == "X'00ff10'");
}

TEST_CASE("sql: literal") {
  CHECK(sql::literal(std::nullopt, false) == "NULL");
  CHECK(sql::literal(std::nullopt, true) == "NULL");
  CHECK(sql::literal("o'k"s, false) == "'o\\'k'");
  CHECK(sql::literal("ab"s, true) == "X'6162'");
  CHECK(sql::literal(""s, true) == "''");
  CHECK(sql::literal(""s, false) == "''");
}

TEST_CASE("sql: ident_list") {
  CHECK(sql::ident_list({}).empty());
  CHECK(sql::ident_list({"a"}) == "`a`");
  CHECK(sql::ident_list({"a", "b`c"}) == "`a`, `b``c`");
}

TEST_CASE("sql: tag") {
  CHECK(sql::tag("job", 7) == "/* goarchive job=job run=7 */");
  CHECK(sql::tag("job", 0) == "/* goarchive job=job */");
}

TEST_CASE("sql: keyset_after for one, two and three columns") {
  CHECK(sql::keyset_after({"id"}, {"5"}) == "(`id` > 5)");
  CHECK(sql::keyset_after({"a", "b"}, {"1", "'x'"}) == "((`a` > 1 OR (`a` = 1 AND `b` > 'x')))");
  CHECK(sql::keyset_after({"a", "b", "c"}, {"1", "2", "3"}) ==
        "((`a` > 1 OR (`a` = 1 AND (`b` > 2 OR (`b` = 2 AND `c` > 3)))))");
  CHECK(sql::keyset_after({"a`b"}, {"NULL"}) == "(`a``b` > NULL)");
}

TEST_CASE("sql: key_in for one column and composite keys") {
  CHECK(sql::key_in({"id"}, {{"1"}, {"2"}, {"3"}}) == "`id` IN (1,2,3)");
  CHECK(sql::key_in({"id"}, {{"'a'"}}) == "`id` IN ('a')");
  CHECK(sql::key_in({"a", "b"}, {{"1", "'x'"}, {"2", "'y'"}}) ==
        "((`a` = 1 AND `b` = 'x') OR (`a` = 2 AND `b` = 'y'))");
  CHECK(sql::key_in({"a", "b", "c"}, {{"1", "2", "3"}}) == "((`a` = 1 AND `b` = 2 AND `c` = 3))");
}

TEST_CASE("sql: key_in with no keys is FALSE") {
  CHECK(sql::key_in({"id"}, {}) == "FALSE");
  CHECK(sql::key_in({"a", "b"}, {}) == "FALSE");
}

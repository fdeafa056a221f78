// Unit tests of lib/plan/sql: quoting, literals and generated predicates.
#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
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

TEST_CASE("sql: literal of an integer column: whole numbers bare, anything else as before") {
  CHECK(sql::literal("2001"s, false, true) == "2001");
  CHECK(sql::literal("-7"s, false, true) == "-7");
  CHECK(sql::literal("0"s, false, true) == "0");
  CHECK(sql::literal("18446744073709551615"s, false, true) == "18446744073709551615");
  CHECK(sql::literal(std::nullopt, false, true) == "NULL");
  // Not the server's text of a whole number: quoted, compared as before.
  CHECK(sql::literal("007"s, false, true) == "'007'");
  CHECK(sql::literal("-0"s, false, true) == "'-0'");
  CHECK(sql::literal("-"s, false, true) == "'-'");
  CHECK(sql::literal(""s, false, true) == "''");
  CHECK(sql::literal("1e3"s, false, true) == "'1e3'");
  CHECK(sql::literal(" 1"s, false, true) == "' 1'");
  CHECK(sql::literal("1; DROP TABLE t"s, false, true) == "'1; DROP TABLE t'");
  CHECK(sql::literal("123456789012345678901"s, false, true) == "'123456789012345678901'");
  // Not an integer column: quoted even when the text is digits (a VARCHAR '2001' is not the number 2001).
  CHECK(sql::literal("2001"s, false, false) == "'2001'");
  CHECK(sql::literal("2001"s, true, true) == "X'32303031'");
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
  CHECK(sql::key_in({"a", "b"}, {{"1", "'x'"}, {"2", "'y'"}}) == "(`a`, `b`) IN ((1,'x'),(2,'y'))");
  CHECK(sql::key_in({"emp_no", "from_date"}, {{"'10001'", "'1986-06-26'"}, {"'10001'", "'1987-06-26'"}}) ==
        "(`emp_no`, `from_date`) IN (('10001','1986-06-26'),('10001','1987-06-26'))");
  CHECK(sql::key_in({"b", "n"}, {{"X'00ff'", "'1'"}, {"''", "'2'"}}) == "(`b`, `n`) IN ((X'00ff','1'),('','2'))");
}

TEST_CASE("sql: key_in writes one composite key as equalities") {
  // `(a, b) IN ((x, y))` is a full scan in a MariaDB 10.11 DELETE.
  CHECK(sql::key_in({"a", "b", "c"}, {{"1", "2", "3"}}) == "(`a` = 1 AND `b` = 2 AND `c` = 3)");
  CHECK(sql::key_in({"a", "b"}, {{"1", "'x'"}}, "c") == "(c.`a` = 1 AND c.`b` = 'x')");
}

TEST_CASE("sql: key_in with an alias qualifies every column") {
  CHECK(sql::key_in({"id"}, {{"1"}, {"2"}}, "c") == "c.`id` IN (1,2)");
  CHECK(sql::key_in({"a", "b`x"}, {{"1", "2"}, {"3", "4"}}, "c") == "(c.`a`, c.`b``x`) IN ((1,2),(3,4))");
}

namespace {

std::vector<sql::KeyLiterals> numbered_keys(size_t n, size_t columns) {
  std::vector<sql::KeyLiterals> keys;
  for (size_t i = 0; i < n; ++i) keys.emplace_back(columns, std::string("'").append(std::to_string(i)).append("'"));
  return keys;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("sql: key_in keeps every IN list under 1000 values, in lists of near-equal length") {
  // MariaDB rewrites IN lists of 1000 or more values into a semi-join over a temporary table.
  CHECK(count_of(sql::key_in({"id"}, numbered_keys(999, 1)), " IN (") == 1);
  std::string one = sql::key_in({"id"}, numbered_keys(1000, 1));
  CHECK(count_of(one, " IN (") == 2);
  CHECK(one.rfind("(`id` IN ('0',", 0) == 0);
  CHECK(one.find(",'499') OR `id` IN ('500',") != std::string::npos);
  CHECK(one.substr(one.size() - 8) == ",'999'))");

  CHECK(count_of(sql::key_in({"a", "b"}, numbered_keys(499, 2)), " IN (") == 1);
  std::string two = sql::key_in({"a", "b"}, numbered_keys(500, 2));
  CHECK(count_of(two, " IN (") == 2);
  CHECK(two.find("('249','249')) OR (`a`, `b`) IN (('250','250')") != std::string::npos);
  CHECK(count_of(sql::key_in({"a", "b"}, numbered_keys(1000, 2)), " IN (") == 3);
  CHECK(count_of(sql::key_in({"a", "b", "c"}, numbered_keys(1000, 3)), " IN (") == 4);

  // One key more than a list holds: two lists of about half, never a list of one key.
  std::string split = sql::key_in({"a", "b"}, numbered_keys(500, 2));
  CHECK(split.find(" = ") == std::string::npos);
  CHECK(split.front() == '(');
  CHECK(split.back() == ')');
}

TEST_CASE("sql: key_in rejects keys of the wrong arity") {
  CHECK_THROWS_AS(sql::key_in({"a", "b"}, {{"1"}}), std::invalid_argument);
  CHECK_THROWS_AS(sql::key_in({"a"}, {{"1"}, {"1", "2"}}), std::invalid_argument);
  CHECK_THROWS_AS(sql::key_in({}, {{"1"}}), std::invalid_argument);
}

TEST_CASE("sql: key_in with no keys is FALSE") {
  CHECK(sql::key_in({"id"}, {}) == "FALSE");
  CHECK(sql::key_in({"a", "b"}, {}) == "FALSE");
}

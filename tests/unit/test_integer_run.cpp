// Unit tests of lib/plan/integer_run: which key sets are unbroken runs, how they are cut, and the range text.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "plan/integer_run.h"

namespace sql = goarchive::sql;

TEST_CASE("integer_runs: an unbroken run in any order is found and cut least first") {
  auto runs = sql::integer_runs({"7", "5", "6", "9", "8"}, 2);
  REQUIRE(runs);
  REQUIRE(runs->size() == 3);
  CHECK((*runs)[0].lo == "5");
  CHECK((*runs)[0].hi == "6");
  CHECK((*runs)[0].count == 2);
  CHECK((*runs)[2].lo == "9");
  CHECK((*runs)[2].hi == "9");
  CHECK((*runs)[2].count == 1);
  auto one = sql::integer_runs({"42"}, 500);
  REQUIRE(one);
  CHECK(one->size() == 1);
  CHECK((*one)[0].count == 1);
}

TEST_CASE("integer_runs: a gap, a repeat or a value that is not a whole number gives no run") {
  CHECK_FALSE(sql::integer_runs({"1", "2", "4"}, 10));
  CHECK_FALSE(sql::integer_runs({"1", "2", "2", "3"}, 10));
  CHECK_FALSE(sql::integer_runs({"1", "2.5"}, 10));
  CHECK_FALSE(sql::integer_runs({"1", " 2"}, 10));
  CHECK_FALSE(sql::integer_runs({"1", ""}, 10));
  CHECK_FALSE(sql::integer_runs({"-"}, 10));
  CHECK_FALSE(sql::integer_runs({"0x1"}, 10));
  CHECK_FALSE(sql::integer_runs({}, 10));
  CHECK_FALSE(sql::integer_runs({"1"}, 0));
}

TEST_CASE("integer_runs: signed and unsigned 64-bit edges, no overflow") {
  auto neg = sql::integer_runs({"-1", "0", "1", "-2"}, 10);
  REQUIRE(neg);
  CHECK((*neg)[0].lo == "-2");
  CHECK((*neg)[0].hi == "1");
  auto top = sql::integer_runs({"18446744073709551615", "18446744073709551614"}, 10);
  REQUIRE(top);
  CHECK((*top)[0].hi == "18446744073709551615");
  CHECK_FALSE(sql::integer_runs({"18446744073709551616"}, 10));                 // beyond 64 bits
  CHECK_FALSE(sql::integer_runs({"-1", "9223372036854775808"}, 10));            // no column holds both
  auto low = sql::integer_runs({"-9223372036854775808", "-9223372036854775807"}, 10);
  REQUIRE(low);
  CHECK((*low)[0].lo == "-9223372036854775808");
  CHECK_FALSE(sql::integer_runs({"18446744073709551615", "0"}, 10));            // a gap, not a wrap
}

TEST_CASE("integer_runs: leading zeros (ZEROFILL text) become canonical bounds") {
  auto runs = sql::integer_runs({"0007", "0008"}, 10);
  REQUIRE(runs);
  CHECK((*runs)[0].lo == "7");
  CHECK((*runs)[0].hi == "8");
}

TEST_CASE("between: the range text, with and without an alias") {
  sql::IntegerRun run{"100001", "101000", 1000};
  CHECK(sql::between("id", run) == "`id` BETWEEN 100001 AND 101000");
  CHECK(sql::between("order_id", run, "c") == "c.`order_id` BETWEEN 100001 AND 101000");
  CHECK(sql::between("we`ird", run) == "`we``ird` BETWEEN 100001 AND 101000");
}

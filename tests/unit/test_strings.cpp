// Unit tests of lib/util/strings.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "util/error.h"
#include "util/strings.h"

using goarchive::ConfigError;
using namespace std::string_literals;

TEST_CASE("strings: parse_duration accepts seconds, minutes, hours and combinations") {
  using goarchive::parse_duration;
  CHECK(parse_duration("90s", "d") == doctest::Approx(90));
  CHECK(parse_duration("15m", "d") == doctest::Approx(900));
  CHECK(parse_duration("2h", "d") == doctest::Approx(7200));
  CHECK(parse_duration("1h30m", "d") == doctest::Approx(5400));
  CHECK(parse_duration("1.5s", "d") == doctest::Approx(1.5));
  CHECK(parse_duration("10", "d") == doctest::Approx(10));
  CHECK(parse_duration("1d", "d") == doctest::Approx(86400));
  CHECK(parse_duration(" 90s ", "d") == doctest::Approx(90));
}

TEST_CASE("strings: parse_duration refuses what is not a positive duration") {
  using goarchive::parse_duration;
  for (const char* bad : {"", "   ", "abc", "5x", "0s", "-1s", "s", "1h30", "0", "400d"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_duration(bad, "--max-runtime"), ConfigError);
  }
  try {
    parse_duration("5x", "--max-runtime");
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("--max-runtime") != std::string::npos);
    CHECK(e.exit_code() == 2);
  }
}

TEST_CASE("strings: format_duration") {
  using goarchive::format_duration;
  CHECK(format_duration(4.2) == "4.2s");
  CHECK(format_duration(0) == "0.0s");
  CHECK(format_duration(90) == "1m30s");
  CHECK(format_duration(600) == "10m00s");
  CHECK(format_duration(3723) == "1h02m03s");
  CHECK(format_duration(7200) == "2h00m00s");
}

TEST_CASE("strings: sha256 and to_hex") {
  CHECK(goarchive::to_hex(goarchive::sha256("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(goarchive::to_hex(goarchive::sha256("")) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(goarchive::sha256("abc").size() == 32);
  CHECK(goarchive::to_hex("") == "");
  CHECK(goarchive::to_hex("\0\x01\xab\xff"s) == "0001abff");
}

TEST_CASE("strings: split") {
  using V = std::vector<std::string>;
  CHECK(goarchive::split("a,b,c", ',') == V{"a", "b", "c"});
  CHECK(goarchive::split("a,,b", ',') == V{"a", "", "b"});
  CHECK(goarchive::split("", ',') == V{""});
  CHECK(goarchive::split("a,", ',') == V{"a", ""});
  CHECK(goarchive::split("abc", ',') == V{"abc"});
}

TEST_CASE("strings: join") {
  CHECK(goarchive::join({}, ", ").empty());
  CHECK(goarchive::join({"a"}, ", ") == "a");
  CHECK(goarchive::join({"a", "b", "c"}, ", ") == "a, b, c");
  CHECK(goarchive::join({"", ""}, "-") == "-");
}

TEST_CASE("strings: trim") {
  CHECK(goarchive::trim("  a b \t\n") == "a b");
  CHECK(goarchive::trim("") == "");
  CHECK(goarchive::trim(" \t ") == "");
  CHECK(goarchive::trim("x") == "x");
}

TEST_CASE("strings: ascii_lower leaves non-ASCII bytes unchanged") {
  CHECK(goarchive::ascii_lower("ABC xyz 09_Z") == "abc xyz 09_z");
  CHECK(goarchive::ascii_lower("\xC3\x84" "B") == "\xC3\x84" "b");  // "ÄB" -> "Äb"
  CHECK(goarchive::ascii_lower("\xF0\x9F\x98\x80T") == "\xF0\x9F\x98\x80t");
  CHECK(goarchive::ascii_lower("\0A"s) == "\0a"s);
}

TEST_CASE("strings: same_names compares column names in order, ASCII case-insensitive") {
  using goarchive::same_names;
  CHECK(same_names({"emp_no", "From_Date"}, {"EMP_NO", "from_date"}));
  CHECK_FALSE(same_names({"emp_no", "from_date"}, {"from_date", "emp_no"}));  // order matters
  CHECK_FALSE(same_names({"emp_no"}, {"emp_no", "from_date"}));
  CHECK(same_names({}, {}));
}

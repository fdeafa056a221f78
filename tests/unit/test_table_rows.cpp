// Unit tests of pipeline::TableRows' key index: every registered key is found at its row, through the table's
// growth, a key registered twice finds its latest row, and a key never registered is not found.
#include <doctest/doctest.h>

#include <string>

#include "pipeline/batch.h"

using goarchive::pipeline::TableRows;

TEST_CASE("TableRows finds every key at its row while the index grows") {
  TableRows tb;
  CHECK_FALSE(tb.find("absent").has_value());
  const size_t n = 5000;
  for (size_t r = 0; r < n; ++r) tb.index("k" + std::to_string(r * 7), static_cast<int>(r % 3));
  for (size_t r = 0; r < n; ++r) {
    auto at = tb.find("k" + std::to_string(r * 7));
    REQUIRE(at.has_value());
    CHECK(*at == r);
  }
  CHECK_FALSE(tb.find("k1").has_value());
  CHECK_FALSE(tb.find("").has_value());
  CHECK(tb.root[4999] == 4999 % 3);
  CHECK(tb.rows_of(1).size() == 1667);  // r % 3 == 1 for r < 5000
}

TEST_CASE("TableRows: a key registered twice finds its latest row, before and after the index grows") {
  TableRows tb;
  tb.index("same", 0);
  tb.index("other", 0);
  tb.index("same", 1);
  CHECK(*tb.find("same") == 2);
  CHECK(*tb.find("other") == 1);
  for (size_t r = 3; r < 300; ++r) tb.index(std::to_string(r), -1);
  CHECK(*tb.find("same") == 2);
  CHECK(*tb.find("other") == 1);
  CHECK(*tb.find("299") == 299);
}

TEST_CASE("TableRows keys that differ only after a NUL byte are distinct") {
  TableRows tb;
  tb.index(std::string("a\0b", 3), 0);
  tb.index(std::string("a\0c", 3), 0);
  CHECK(*tb.find(std::string("a\0b", 3)) == 0);
  CHECK(*tb.find(std::string("a\0c", 3)) == 1);
  CHECK_FALSE(tb.find("a").has_value());
}

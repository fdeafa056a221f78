// Unit tests of pipeline::key_ranges: which keys of a batch go by range, grouped by their leading key columns,
// and which stay for exact-key lists.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pipeline/rows.h"

using goarchive::db::RowSet;
using goarchive::pipeline::key_ranges;
using goarchive::pipeline::KeyRange;
using goarchive::pipeline::TableMeta;

namespace {

TableMeta meta(std::vector<std::string> columns, std::vector<bool> integer, std::vector<size_t> key_idx) {
  TableMeta m;
  m.columns = std::move(columns);
  m.integer = std::move(integer);
  m.key_idx = std::move(key_idx);
  for (size_t i : m.key_idx) m.key_cols.push_back(m.columns[i]);
  m.binary.assign(m.columns.size(), false);
  m.key_binary.assign(m.key_idx.size(), false);
  for (size_t i : m.key_idx) m.key_integer.push_back(m.integer[i]);
  return m;
}

RowSet rows_of(const std::vector<std::vector<std::string>>& rows, size_t cols) {
  RowSet r;
  std::vector<std::string> names;
  for (size_t c = 0; c < cols; ++c) names.push_back(std::string("c").append(std::to_string(c)));
  r.set_columns(names);
  for (const auto& row : rows) {
    for (const auto& v : row) r.push(v);
  }
  return r;
}

}  // namespace

TEST_CASE("key_ranges: one integer column, an unbroken run cut at max_count") {
  TableMeta m = meta({"id", "v"}, {true, false}, {0});
  RowSet r = rows_of({{"3", "x"}, {"1", "y"}, {"2", "z"}, {"4", "w"}}, 2);
  std::vector<size_t> rest;
  auto ranges = key_ranges(m, r, {0, 1, 2, 3}, 3, rest);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].where == "`id` BETWEEN 1 AND 3");
  CHECK(ranges[0].count == 3);
  CHECK(ranges[1].where == "`id` BETWEEN 4 AND 4");
  CHECK(rest.empty());
}

TEST_CASE("key_ranges: composite integer keys group by their leading columns") {
  TableMeta m = meta({"tenant_id", "id", "v"}, {true, true, false}, {0, 1});
  RowSet r = rows_of({{"1", "10", "a"}, {"1", "11", "b"}, {"2", "0", "c"}, {"2", "1", "d"}, {"3", "5", "e"},
                      {"3", "7", "f"}},
                     3);
  std::vector<size_t> rest;
  auto ranges = key_ranges(m, r, {0, 1, 2, 3, 4, 5}, 1000, rest);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].where == "`tenant_id` = 1 AND `id` BETWEEN 10 AND 11");
  CHECK(ranges[0].first == "1, 10");
  CHECK(ranges[1].where == "`tenant_id` = 2 AND `id` BETWEEN 0 AND 1");
  CHECK(rest == std::vector<size_t>{4, 5});  // tenant 3 has a gap: exact keys
}

TEST_CASE("key_ranges: a key with a column that is not an integer goes by exact key") {
  TableMeta m = meta({"name", "n"}, {false, true}, {0, 1});
  RowSet r = rows_of({{"a", "1"}, {"a", "2"}}, 2);
  std::vector<size_t> rest;
  CHECK(key_ranges(m, r, {0, 1}, 1000, rest).empty());
  CHECK(rest == std::vector<size_t>{0, 1});
  TableMeta u = meta({"id"}, {false}, {0});  // e.g. DECIMAL: 1.5 lies between 1 and 2
  RowSet d = rows_of({{"1"}, {"2"}}, 1);
  std::vector<size_t> rest2;
  CHECK(key_ranges(u, d, {0, 1}, 1000, rest2).empty());
  CHECK(rest2.size() == 2);
}

TEST_CASE("key_ranges: only the rows asked for, and a repeat breaks the run") {
  TableMeta m = meta({"id"}, {true}, {0});
  RowSet r = rows_of({{"1"}, {"2"}, {"2"}, {"3"}}, 1);
  std::vector<size_t> rest;
  auto ranges = key_ranges(m, r, {0, 1, 3}, 1000, rest);
  REQUIRE(ranges.size() == 1);
  CHECK(ranges[0].where == "`id` BETWEEN 1 AND 3");
  std::vector<size_t> rest2;
  CHECK(key_ranges(m, r, {0, 1, 2, 3}, 1000, rest2).empty());
  CHECK(rest2.size() == 4);
}

TEST_CASE("key_ranges: a batch's root keys, grouped like rows, and a key that is not a whole number stays exact") {
  TableMeta m = meta({"tenant_id", "id", "v"}, {true, true, false}, {0, 1});
  std::vector<std::vector<std::string>> keys{{"2", "5"}, {"1", "1"}, {"2", "4"}, {"1", "2"}, {"3", "x"}};
  std::vector<size_t> rest;
  auto ranges = key_ranges(m, keys, 1000, rest);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].where == "`tenant_id` = 1 AND `id` BETWEEN 1 AND 2");
  CHECK(ranges[0].count == 2);
  CHECK(ranges[1].where == "`tenant_id` = 2 AND `id` BETWEEN 4 AND 5");
  CHECK(rest == std::vector<size_t>{4});
  TableMeta s = meta({"code"}, {false}, {0});
  std::vector<size_t> rest2;
  CHECK(key_ranges(s, std::vector<std::vector<std::string>>{{"1"}, {"2"}}, 1000, rest2).empty());
  CHECK(rest2 == std::vector<size_t>{0, 1});
}

TEST_CASE("run_range: one run of one column, with its alias, or nothing") {
  using goarchive::pipeline::run_range;
  CHECK(run_range("p_id", true, {"7", "5", "6"}, "c") == std::optional<std::string>("c.`p_id` BETWEEN 5 AND 7"));
  CHECK(run_range("p_id", true, {"5", "7"}) == std::nullopt);   // a gap
  CHECK(run_range("p_id", false, {"5", "6"}) == std::nullopt);  // not an integer column
  CHECK(run_range("p_id", true, {}) == std::nullopt);
}

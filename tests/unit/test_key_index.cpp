// Unit tests of lib/pipeline/key_index: which index a keyed statement names, and the join text of key_joins.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pipeline/key_index.h"

namespace pl = goarchive::pipeline;

namespace {

const std::vector<pl::IndexColumns> k_indexes = {
    {"PRIMARY", true, {"id", "created"}},
    {"by_created", false, {"created"}},
    {"uk_code", true, {"code"}},
    {"fk_ev", false, {"ev_id", "ev_created", "id"}},
};

}  // namespace

TEST_CASE("key_index: pick_index prefers PRIMARY, then a unique index, then a leading prefix") {
  CHECK(pl::pick_index(k_indexes, {"id", "created"}) == "PRIMARY");
  CHECK(pl::pick_index(k_indexes, {"ID", "Created"}) == "PRIMARY");  // names compare case-insensitively
  CHECK(pl::pick_index(k_indexes, {"code"}) == "uk_code");
  CHECK(pl::pick_index(k_indexes, {"ev_created", "ev_id"}) == "fk_ev");  // a foreign key's columns in any order
  CHECK(pl::pick_index(k_indexes, {"created"}) == "by_created");
  CHECK(pl::pick_index(k_indexes, {"id"}) == "PRIMARY");  // the leading column of the primary key
  CHECK(pl::pick_index(k_indexes, {"payload"}).empty());
  CHECK(pl::pick_index(k_indexes, {}).empty());
  CHECK(pl::pick_index({}, {"id"}).empty());
}

TEST_CASE("key_index: force_index writes PRIMARY bare and quotes the others") {
  CHECK(pl::force_index({}).empty());
  CHECK(pl::force_index({"PRIMARY"}) == " FORCE INDEX (PRIMARY)");
  CHECK(pl::force_index({"PRIMARY", "fk`x"}) == " FORCE INDEX (PRIMARY, `fk``x`)");
}

TEST_CASE("key_index: key_joins reads the keys first and joins the index") {
  const std::string t = "`d`.`ev`";
  auto joins = pl::key_joins({"id", "created"}, {{"1", "'2020-01-01'"}, {"2", "'2020-01-02'"}}, t,
                             " FORCE INDEX (PRIMARY)", 1 << 20);
  REQUIRE(joins.size() == 1);
  CHECK(joins[0] ==
        "(SELECT 1 AS k0, '2020-01-01' AS k1 UNION ALL SELECT 2, '2020-01-02') AS k STRAIGHT_JOIN `d`.`ev` FORCE "
        "INDEX (PRIMARY) ON `d`.`ev`.`id` = k.k0 AND `d`.`ev`.`created` = k.k1");
  // One key: no UNION.
  CHECK(pl::key_joins({"id"}, {{"7"}}, t, " FORCE INDEX (PRIMARY)", 1 << 20)[0] ==
        "(SELECT 7 AS k0) AS k STRAIGHT_JOIN `d`.`ev` FORCE INDEX (PRIMARY) ON `d`.`ev`.`id` = k.k0");
}

TEST_CASE("key_index: key_joins splits by key count and by bytes, and names columns in every part") {
  std::vector<goarchive::sql::KeyLiterals> keys;
  for (int i = 0; i < 10; ++i) keys.push_back({std::to_string(i)});
  auto by_count = pl::key_joins({"id"}, keys, "`d`.`t`", " FORCE INDEX (PRIMARY)", 1 << 20, 4);
  REQUIRE(by_count.size() == 3);
  CHECK(by_count[1].rfind("(SELECT 4 AS k0 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7) AS k", 0) == 0);
  CHECK(by_count[2].rfind("(SELECT 8 AS k0 UNION ALL SELECT 9) AS k", 0) == 0);
  auto by_bytes = pl::key_joins({"id"}, keys, "`d`.`t`", " FORCE INDEX (PRIMARY)", 60);
  CHECK(by_bytes.size() > 1);
  int union_parts = 0;
  for (const auto& j : by_bytes) {
    CHECK(j.find(" AS k0") != std::string::npos);  // each part names its column
    for (size_t at = j.find("UNION ALL"); at != std::string::npos; at = j.find("UNION ALL", at + 1)) ++union_parts;
  }
  CHECK(union_parts == 10 - static_cast<int>(by_bytes.size()));  // every key once
  CHECK_THROWS_AS(pl::key_joins({"a", "b"}, {{"1"}}, "`d`.`t`", " FORCE INDEX (PRIMARY)", 1 << 20),
                  std::invalid_argument);
}

TEST_CASE("key_index: without an index, key_joins writes the key list in the same FROM shape") {
  auto joins = pl::key_joins({"id", "created"}, {{"1", "'2020-01-01'"}, {"2", "'2020-01-02'"}}, "`d`.`ev`", "",
                             1 << 20);
  REQUIRE(joins.size() == 1);
  CHECK(joins[0] == "`d`.`ev` WHERE (`d`.`ev`.`id`, `d`.`ev`.`created`) IN ((1,'2020-01-01'),(2,'2020-01-02'))");
}

TEST_CASE("key_index: joined_columns names each column through the table, as key_joins' text does") {
  CHECK(pl::joined_columns("`d`.`t`", {"id"}) == "`d`.`t`.`id`");
  CHECK(pl::joined_columns("`d`.`t`", {"id", "cre`ated"}) == "`d`.`t`.`id`, `d`.`t`.`cre``ated`");
  CHECK(pl::joined_columns("`d`.`t`", {}).empty());
}

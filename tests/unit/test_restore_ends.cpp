// Unit tests of restore's swapped ends: reversed() swaps every table's two names and drops the references from
// outside the job (none reach the archive); the command name the registry records for restore; the unfinished-work
// rule that a batch is finished only by the command that wrote it applies to restore by that name.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pipeline/context.h"
#include "pipeline/table_meta.h"

using goarchive::pipeline::Mode;
using goarchive::pipeline::TableMeta;

TEST_CASE("reversed() swaps source and destination names of every table and drops outside references") {
  std::vector<TableMeta> tables(2);
  tables[0].source_name = "`shop`.`orders`";
  tables[0].destination_name = "`shop_archive`.`orders`";
  tables[1].source_name = "`shop`.`order_items`";
  tables[1].destination_name = "`shop_archive`.`order_items`";
  tables[0].outside.emplace_back();
  tables[0].outside[0].source_name = "`shop`.`reviews`";
  tables[1].key_cols = {"id"};
  auto out = goarchive::pipeline::reversed(tables);
  REQUIRE(out.size() == 2);
  CHECK(out[0].source_name == "`shop_archive`.`orders`");
  CHECK(out[0].destination_name == "`shop`.`orders`");
  CHECK(out[1].source_name == "`shop_archive`.`order_items`");
  CHECK(out[1].destination_name == "`shop`.`order_items`");
  CHECK(out[0].outside.empty());
  CHECK(out[1].key_cols == std::vector<std::string>{"id"});  // everything else as it was
  // Twice is the identity on the names.
  auto back = goarchive::pipeline::reversed(out);
  CHECK(back[0].source_name == tables[0].source_name);
  CHECK(back[1].destination_name == tables[1].destination_name);
}

TEST_CASE("restore is recorded as its own command") {
  CHECK(std::string(goarchive::pipeline::mode_name(Mode::restore)) == "restore");
  CHECK(std::string(goarchive::pipeline::mode_name(Mode::archive)) == "archive");
  CHECK(std::string(goarchive::pipeline::mode_name(Mode::restore)) != goarchive::pipeline::mode_name(Mode::archive));
}

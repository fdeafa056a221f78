// "Did you mean" for mistyped commands and tables.
#include <doctest/doctest.h>

#include "util/suggest.h"

using goarchive::close_matches;
using goarchive::did_you_mean;
using goarchive::edit_distance;

TEST_CASE("suggest: edit distance") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("archiv", "archive") == 1);
  CHECK(edit_distance("employes", "employees") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("Orders", "orders") == 0);
  CHECK(edit_distance("valdiate", "validate") == 2);
}

TEST_CASE("suggest: close matches, closest first, only close ones") {
  std::vector<std::string> cmds{"archive", "copy-only", "purge", "dry-run", "plan", "validate", "jobs", "locks",
                                "discover", "version"};
  CHECK(close_matches("archiv", cmds) == std::vector<std::string>{"archive"});
  CHECK(close_matches("purg", cmds) == std::vector<std::string>{"purge"});
  CHECK(close_matches("lock", cmds) == std::vector<std::string>{"locks"});
  // Ties keep the candidates' order.
  CHECK(close_matches("shipment_", {"shipments", "shipment_items", "shipment"}) ==
        std::vector<std::string>{"shipments", "shipment"});
  CHECK(close_matches("frobnicate", cmds).empty());
  std::vector<std::string> tables{"departments", "dept_emp", "employees", "salaries", "titles"};
  CHECK(close_matches("employes", tables) == std::vector<std::string>{"employees"});
  CHECK(close_matches("titels", tables, 1) == std::vector<std::string>{"titles"});
  CHECK(close_matches("x", tables).empty());
}

TEST_CASE("suggest: did you mean") {
  CHECK(did_you_mean({}) == "");
  CHECK(did_you_mean({"employees"}) == "did you mean employees?");
  CHECK(did_you_mean({"a", "b"}) == "did you mean a or b?");
  CHECK(did_you_mean({"a", "b", "c"}, true) == "did you mean \"a\", \"b\" or \"c\"?");
}

// Unit tests of the pure parts of pipeline/definitions (schema drift) and of how a run counts its conflicts.
#include <doctest/doctest.h>

#include <string>

#include "pipeline/definitions.h"
#include "pipeline/stats.h"

using goarchive::pipeline::definition_change;
using goarchive::pipeline::Definitions;

TEST_CASE("definition_change: the first table that changed or is gone, named with its side and database") {
  Definitions then{{"c", "id int(11) NO  |v varchar(20) YES utf8mb4_general_ci "}, {"p", "id int(11) NO  "}};
  CHECK_FALSE(definition_change(then, then, "source", "shop"));
  Definitions added = then;
  added["c"] += "|extra int(11) NO  ";
  auto why = definition_change(then, added, "source", "shop");
  REQUIRE(why);
  CHECK(why->find("the definition of source table shop.c changed during the run") == 0);
  CHECK(why->find("Make the source and destination tables match again") != std::string::npos);
  Definitions gone{{"c", then["c"]}};
  why = definition_change(then, gone, "destination", "arch");
  REQUIRE(why);
  CHECK(why->find("destination table arch.p") != std::string::npos);
  // A table the run never knew (or one more in `now`) is not a change of the job's tables.
  Definitions more = then;
  more["other"] = "x int(11) NO  ";
  CHECK_FALSE(definition_change(then, more, "source", "shop"));
}

TEST_CASE("Stats::add_conflict counts and names a root once however often the run meets it") {
  goarchive::pipeline::Stats s;
  s.add_conflict("p (id) = (3)");
  s.add_conflict("p (id) = (3)");
  s.add_conflict("p (id) = (4)");
  CHECK(s.roots_conflict == 2);
  CHECK(s.conflicts == std::vector<std::string>{"p (id) = (3)", "p (id) = (4)"});
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 30; ++i) s.add_conflict(std::string("q ").append(std::to_string(i)));
  }
  CHECK(s.roots_conflict == 32);  // the second round names the same 30 roots again
  CHECK(s.conflicts.size() == 20);
}

TEST_CASE("probe_text: the table's AUTO_INCREMENT counter is left out, nothing else") {
  using goarchive::pipeline::probe_text;
  const std::string head = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n)";
  CHECK(probe_text(head + " ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4") ==
        head + " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
  CHECK(probe_text(head + " ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4") ==
        probe_text(head + " ENGINE=InnoDB AUTO_INCREMENT=9000 DEFAULT CHARSET=utf8mb4"));
  CHECK(probe_text(head + " ENGINE=InnoDB AUTO_INCREMENT=7") == head + " ENGINE=InnoDB");
  // No counter: unchanged. The column's own AUTO_INCREMENT attribute is never touched.
  CHECK(probe_text(head + " ENGINE=InnoDB") == head + " ENGINE=InnoDB");
  // Only the table options: a column named like the option keeps its name, so a rename still shows.
  const std::string odd = "CREATE TABLE `t` (\n  `a AUTO_INCREMENT=1` int(11)\n) ENGINE=InnoDB";
  CHECK(probe_text(odd) == odd);
  CHECK(probe_text("CREATE TABLE `t` (\n  `a AUTO_INCREMENT=2` int(11)\n) ENGINE=InnoDB") != probe_text(odd));
  // Not a counter (no digits, or digits that run on): kept, so the probe only ever errs towards a full check.
  CHECK(probe_text(head + " AUTO_INCREMENT= x") == head + " AUTO_INCREMENT= x");
  CHECK(probe_text(head + " AUTO_INCREMENT=12x") == head + " AUTO_INCREMENT=12x");
  // Partitions follow the options on further lines.
  CHECK(probe_text(head + " ENGINE=InnoDB AUTO_INCREMENT=3\n PARTITION BY HASH (`id`)") ==
        head + " ENGINE=InnoDB\n PARTITION BY HASH (`id`)");
}

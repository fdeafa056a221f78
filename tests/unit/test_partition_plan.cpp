// Unit tests of the partition path's pure parts (issue 34): the config keys, which partitions leave whole and why
// (pipeline/partition_plan.h), the side table's name and the row path's exclusion of partitions left whole
// (pipeline/partition_path.h). No server.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "config/config.h"
#include "helpers.h"
#include "pipeline/partition_path.h"
#include "pipeline/partition_plan.h"
#include "util/error.h"

using goarchive::ConfigError;
using goarchive::config::Job;
using goarchive::config::load_string;
using goarchive::config::Overrides;
using goarchive::pipeline::choose;
using goarchive::pipeline::Mode;
using goarchive::pipeline::PartitionChoice;
using goarchive::pipeline::PartitionFacts;
using goarchive::pipeline::PartitionPath;
using goarchive::pipeline::PartitionRoute;
using goarchive::pipeline::table_route;
using goarchive::test::message_of;

namespace {

const char* k_base = R"(
[source]
user = "u"
database = "s"
[destination]
user = "u"
database = "d"
[jobs.ev]
root_table = "ev"
where = "created < '2026-01-01'"
)";

PartitionFacts part(const std::string& name, const std::string& less_than, bool rows, bool outside,
                    const std::string& method = "RANGE COLUMNS") {
  PartitionFacts p;
  p.name = name;
  p.method = method;
  p.expression = "`created`";
  p.description = less_than;
  p.rows_estimate = rows ? 100 : 0;
  p.any_row = rows;
  p.outside_where = outside;
  return p;
}

std::vector<PartitionFacts> layout() {
  return {part("p1", "'2025-11-01'", true, false), part("p2", "'2025-12-01'", false, false),
          part("p3", "'2026-01-01'", true, true), part("pmax", "MAXVALUE", true, true)};
}

}  // namespace

TEST_CASE("partitions: the keys, their defaults, the flag and the refusals") {
  auto cfg = load_string(k_base, "t.toml", {});
  CHECK(cfg.job("ev").partitions == "auto");
  CHECK(cfg.job("ev").ddl_lock_wait_timeout == 1);
  cfg = load_string(std::string(k_base) + "partitions = \"off\"\nddl_lock_wait_timeout = 5\n", "t.toml", {});
  CHECK(cfg.job("ev").partitions == "off");
  CHECK(cfg.job("ev").ddl_lock_wait_timeout == 5);
  CHECK(cfg.settings.at("jobs.ev.partitions").value == "off");
  Overrides o;
  o.partitions = "off";
  cfg = load_string(k_base, "t.toml", {}, o);
  CHECK(cfg.job("ev").partitions == "off");
  std::string msg = message_of<ConfigError>(
      [&] { (void)load_string(std::string(k_base) + "partitions = \"yes\"\n", "t.toml", {}); });
  CHECK(msg.find("jobs.ev.partitions = \"yes\" is not a choice; use \"auto\"") != std::string::npos);
  msg = message_of<ConfigError>(
      [&] { (void)load_string(std::string(k_base) + "ddl_lock_wait_timeout = 0\n", "t.toml", {}); });
  CHECK(msg.find("ddl_lock_wait_timeout = 0 is out of range; use a value from 1 to 60") != std::string::npos);
}

TEST_CASE("partitions: each partition's route and reason") {
  auto c = choose(layout(), "");
  REQUIRE(c.size() == 4);
  CHECK(c[0].route == PartitionRoute::whole);
  CHECK(c[0].reason == "every row matches where");
  CHECK(c[1].route == PartitionRoute::none);
  CHECK(c[1].reason == "empty");
  CHECK(c[2].route == PartitionRoute::rows);
  CHECK(c[2].reason == "it holds rows outside where");
  CHECK(c[3].route == PartitionRoute::rows);
  CHECK(c[3].reason == "the last partition: new rows land in it");
  // The last partition is never taken whole, even with every row inside where and a bound that is not MAXVALUE.
  auto two = layout();
  two.pop_back();
  two[2].outside_where = false;
  CHECK(choose(two, "")[2].route == PartitionRoute::rows);
  // A partition whose rows were not read is never taken whole.
  auto unread = layout();
  unread[0].outside_where.reset();
  CHECK(choose(unread, "")[0].route == PartitionRoute::rows);
  CHECK(choose(unread, "")[0].reason == "its rows were not read");
  // A table reason sends every partition the row path with that reason.
  for (const auto& x : choose(layout(), "the job has child tables")) {
    CHECK(x.route == PartitionRoute::rows);
    CHECK(x.reason == "the job has child tables");
  }
  CHECK(goarchive::pipeline::describe(c[0]) ==
        "partition p1 (values less than '2025-11-01', ~100 rows): whole: every row matches where");
}

TEST_CASE("partitions: when the whole table takes the row path") {
  Job job;
  job.root_table = "ev";
  job.where = "1=1";
  goarchive::schema::TableInfo root;
  CHECK(table_route(job, Mode::archive, root, layout(), false) == "");
  CHECK(table_route(job, Mode::purge, root, layout(), false) == "");
  CHECK(table_route(job, Mode::archive, root, {}, false) == "the table is not partitioned");
  CHECK(table_route(job, Mode::copy_only, root, layout(), false).find("copy-only") == 0);
  CHECK(table_route(job, Mode::archive, root, layout(), true) == "tables outside the job reference it");
  auto hashed = layout();
  for (auto& p : hashed) p.method = "HASH";
  CHECK(table_route(job, Mode::archive, root, hashed, false) ==
        "it is partitioned by HASH, not by RANGE or RANGE COLUMNS");
  auto sub = layout();
  sub[0].subpartitioned = true;
  CHECK(table_route(job, Mode::archive, root, sub, false) == "it has subpartitions");
  root.triggers.push_back("INSERT AFTER trg_audit");
  CHECK(table_route(job, Mode::archive, root, layout(), false) ==
        "an INSERT trigger would fire for rows outside where that go back");
  root.triggers = {"DELETE AFTER trg_del"};
  job.force_triggers = true;
  CHECK(table_route(job, Mode::archive, root, layout(), false).find("force_triggers") == 0);
  job.force_triggers = false;
  job.partitions = "off";
  CHECK(table_route(job, Mode::archive, root, layout(), false) == "partitions = \"off\"");
  job.partitions = "auto";
  job.relations.push_back({});
  CHECK(table_route(job, Mode::archive, root, layout(), false) == "the job has child tables");
}

TEST_CASE("partitions: the side table's name fits in 64 characters") {
  CHECK(PartitionPath::side_table_name(7, "p2025_10") == "ga_7_p2025_10");
  const std::string long_name(64, 'p');
  const std::string side = PartitionPath::side_table_name(12345, long_name);
  CHECK(side.size() <= 64);
  CHECK(side.rfind("ga_12345_", 0) == 0);
  CHECK(side != PartitionPath::side_table_name(12345, std::string(63, 'p') + "q"));
}

TEST_CASE("partitions: the row path leaves the rows of partitions left whole alone") {
  auto all = layout();
  std::vector<PartitionChoice> left{{"p1", "'2025-11-01'", 0, PartitionRoute::whole, ""}};
  CHECK(PartitionPath::exclusion("`created`", all, left) == "NOT (((`created`) < ('2025-11-01')) IS TRUE)");
  left.push_back({"p3", "'2026-01-01'", 0, PartitionRoute::whole, ""});
  CHECK(PartitionPath::exclusion("`created`", all, left) ==
        "NOT (((`created`) < ('2025-11-01')) IS TRUE) AND NOT (((`created`) >= ('2025-12-01') AND (`created`) < "
        "('2026-01-01')) IS TRUE)");
  CHECK(PartitionPath::exclusion("`created`", all, {}) == "");
}

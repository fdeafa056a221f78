// control::Throttle decisions on recorded readings, and the [throttle] section of the config with its flags.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "config/config.h"
#include "control/throttle.h"
#include "helpers.h"
#include "util/error.h"

using goarchive::ConfigError;
using goarchive::config::Config;
using goarchive::config::load_string;
using goarchive::config::Origin;
using goarchive::config::Overrides;
using goarchive::config::ThrottleConfig;
using goarchive::control::critical_reason;
using goarchive::control::hold_reason;
using goarchive::control::Reading;
using goarchive::test::message_of;

namespace {

ThrottleConfig threads(long long max, long long critical = 0) {
  ThrottleConfig c;
  c.max_threads_running = max;
  c.critical_threads_running = critical;
  return c;
}

ThrottleConfig query(const std::string& q) {
  ThrottleConfig c;
  c.query = q;
  return c;
}

Reading running(long long n) {
  Reading r;
  r.threads_running = n;
  return r;
}

Reading answered(std::optional<std::string> value) {
  Reading r;
  r.query_ran = true;
  r.query_row = true;
  r.query_value = std::move(value);
  return r;
}

const char* k_job = R"(
[source]
user = "u"
database = "shop"
[destination]
user = "u"
database = "arch"
[jobs.j]
root_table = "orders"
where = "1=1"
)";

Config load(const std::string& extra, const Overrides& o = {}) {
  return load_string(extra + k_job, "t.toml", {}, o);
}

std::string error_of(const std::string& extra, const Overrides& o = {}) {
  return message_of<ConfigError>([&] { (void)load(extra, o); });
}

}  // namespace

TEST_CASE("throttle: Threads_running at or above max_threads_running holds, below does not") {
  auto c = threads(10);
  CHECK_FALSE(hold_reason(c, running(9)).has_value());
  CHECK(hold_reason(c, running(10)) == "Threads_running 10 >= max_threads_running 10");
  CHECK(hold_reason(c, running(12)) == "Threads_running 12 >= max_threads_running 10");
}

TEST_CASE("throttle: gates that are off never hold") {
  ThrottleConfig off;
  CHECK_FALSE(off.enabled());
  CHECK_FALSE(hold_reason(off, running(100000)).has_value());
  CHECK_FALSE(hold_reason(off, answered("1")).has_value());
  CHECK_FALSE(critical_reason(off, 100000).has_value());
  CHECK(threads(0, 5).enabled());
  CHECK(query("SELECT 1").enabled());
  // A reading without Threads_running (not read) does not hold on that gate.
  CHECK_FALSE(hold_reason(threads(1), Reading{}).has_value());
}

TEST_CASE("throttle: the query holds on non-zero like gh-ost's throttle query") {
  auto c = query("SELECT busy FROM ops.flags");
  CHECK_FALSE(hold_reason(c, answered("0")).has_value());
  CHECK_FALSE(hold_reason(c, answered("0.000")).has_value());
  CHECK(hold_reason(c, answered("1")) == "throttle query returned 1");
  CHECK(hold_reason(c, answered("-3")) == "throttle query returned -3");
  CHECK(hold_reason(c, answered("0.5")) == "throttle query returned 0.5");
  CHECK(hold_reason(c, answered(" 2 ")) == "throttle query returned 2");
}

TEST_CASE("throttle: the query fails safe: NULL, text and errors hold; no row does not") {
  auto c = query("SELECT busy FROM ops.flags");
  CHECK(hold_reason(c, answered(std::nullopt)) == "throttle query returned NULL");
  CHECK(hold_reason(c, answered("busy")) == "throttle query returned 'busy', not a number");
  CHECK(hold_reason(c, answered("")) == "throttle query returned '', not a number");
  Reading none;
  none.query_ran = true;
  CHECK_FALSE(hold_reason(c, none).has_value());
  Reading failed;
  failed.query_ran = true;
  failed.query_error = "Table 'ops.flags' doesn't exist";
  CHECK(hold_reason(c, failed) == "throttle query failed: Table 'ops.flags' doesn't exist");
}

TEST_CASE("throttle: Threads_running is reported before the query when both hold") {
  ThrottleConfig c = threads(5);
  c.query = "SELECT 1";
  Reading r = answered("1");
  r.threads_running = 7;
  CHECK(hold_reason(c, r) == "Threads_running 7 >= max_threads_running 5");
  r.threads_running = 2;
  CHECK(hold_reason(c, r) == "throttle query returned 1");
}

TEST_CASE("throttle: critical_threads_running stops at or above, never below") {
  auto c = threads(10, 50);
  CHECK_FALSE(critical_reason(c, 49).has_value());
  CHECK(critical_reason(c, 50) == "Threads_running 50 >= critical_threads_running 50");
  CHECK(critical_reason(c, 80) == "Threads_running 80 >= critical_threads_running 50");
}

TEST_CASE("throttle config: defaults when the section is absent") {
  Config cfg = load("");
  CHECK_FALSE(cfg.throttle.enabled());
  CHECK(cfg.throttle.check_interval == doctest::Approx(1));
  CHECK(cfg.throttle.max_hold == doctest::Approx(0));
  CHECK(cfg.settings.at("throttle.max_threads_running").value == "0");
  CHECK(cfg.settings.at("throttle.max_threads_running").origin == Origin::default_value);
  CHECK(cfg.settings.at("throttle.query").value.empty());
  CHECK(cfg.settings.at("processing.analyze").value == "false");
  CHECK_FALSE(cfg.jobs.at("j").processing.analyze);
}

TEST_CASE("throttle config: file values, origins, the query without its ';'") {
  Config cfg = load(R"([throttle]
max_threads_running = 25
critical_threads_running = 100
query = """
  SELECT COUNT(*) > 10 FROM information_schema.PROCESSLIST;
"""
check_interval = 0.5
max_hold = 300
)");
  CHECK(cfg.throttle.max_threads_running == 25);
  CHECK(cfg.throttle.critical_threads_running == 100);
  CHECK(cfg.throttle.query == "SELECT COUNT(*) > 10 FROM information_schema.PROCESSLIST");
  CHECK(cfg.throttle.check_interval == doctest::Approx(0.5));
  CHECK(cfg.throttle.max_hold == doctest::Approx(300));
  for (const char* k : {"throttle.max_threads_running", "throttle.critical_threads_running", "throttle.query",
                        "throttle.check_interval", "throttle.max_hold"}) {
    CAPTURE(k);
    CHECK(cfg.settings.at(k).origin == Origin::file);
  }
  CHECK(cfg.settings.at("throttle.query").value == cfg.throttle.query);
}

TEST_CASE("throttle config: flags override the file and say so") {
  Overrides o;
  o.max_threads_running = 40;
  o.critical_threads_running = 0;
  o.throttle_query = "select 0";
  Config cfg = load("[throttle]\nmax_threads_running = 25\ncritical_threads_running = 30\n", o);
  CHECK(cfg.throttle.max_threads_running == 40);
  CHECK(cfg.throttle.critical_threads_running == 0);
  CHECK(cfg.throttle.query == "select 0");
  CHECK(cfg.settings.at("throttle.max_threads_running").origin == Origin::flag);
  CHECK(cfg.settings.at("throttle.critical_threads_running").origin == Origin::flag);
  CHECK(cfg.settings.at("throttle.query").origin == Origin::flag);
  CHECK(cfg.settings.at("throttle.check_interval").origin == Origin::default_value);
}

TEST_CASE("throttle config: bad values name the key and the fix") {
  CHECK(error_of("[throttle]\nmax_threads_running = -1\n") ==
        "t.toml:2: throttle.max_threads_running = -1 is out of range; use a value from 0 to 1000000");
  CHECK(error_of("[throttle]\nmax_threads_running = \"10\"\n") ==
        "t.toml:2: throttle.max_threads_running must be a whole number");
  CHECK(error_of("[throttle]\ncheck_interval = 0\n").find("throttle.check_interval = 0 is out of range") !=
        std::string::npos);
  CHECK(error_of("[throttle]\nmax_hold = 700000\n").find("throttle.max_hold = 700000 is out of range") !=
        std::string::npos);
  CHECK(error_of("[throttle]\nmax_lag = 1\n") ==
        "t.toml:2: unknown key throttle.max_lag; check its spelling against goarchive.toml(5)");
  CHECK(error_of("[throttle]\nquery = \"SHOW STATUS\"\n").find("t.toml: throttle.query must be one SELECT "
                                                              "statement") == 0);
  CHECK(error_of("[throttle]\nquery = \"SELECTX 1\"\n").find("must be one SELECT statement") != std::string::npos);
  CHECK(error_of("[throttle]\nquery = \"SELECT 1; DELETE FROM t\"\n") ==
        "t.toml: throttle.query must be a single statement: remove the ';' inside it");
  CHECK(error_of("[throttle]\nmax_threads_running = 10\ncritical_threads_running = 5\n") ==
        "t.toml: throttle.critical_threads_running = 5 must be greater than max_threads_running = 10: the run holds "
        "at max_threads_running and stops at critical_threads_running; raise the critical value or set it to 0 (off)");
  CHECK(error_of("[throttle]\nenabled = true\n").find("unknown key throttle.enabled") != std::string::npos);
  // critical alone (max off) and max alone are fine.
  CHECK(load("[throttle]\ncritical_threads_running = 5\n").throttle.critical_threads_running == 5);
  CHECK(load("[throttle]\nmax_threads_running = 5\n").throttle.max_threads_running == 5);
}

TEST_CASE("throttle config: bad flag values") {
  Overrides o;
  o.max_threads_running = -2;
  CHECK(error_of("", o) == "--max-threads-running -2 is out of range; use 0 (off) to 1000000");
  Overrides q;
  q.throttle_query = "UPDATE t SET a = 1";
  CHECK(error_of("", q).find("--throttle-query must be one SELECT statement") == 0);
  Overrides both;
  both.max_threads_running = 20;
  both.critical_threads_running = 20;
  CHECK(error_of("", both).find("--critical-threads-running = 20 must be greater than --max-threads-running = 20") ==
        0);
  Overrides pi;
  pi.progress_interval = 0.5;
  CHECK(error_of("", pi) == "--progress-interval 0.5 is out of range; use 1 to 86400 seconds");
}

TEST_CASE("processing.analyze: a boolean, per job, with its origin; --progress-interval is a flag origin") {
  Config cfg = load("[processing]\nanalyze = true\n");
  CHECK(cfg.processing.analyze);
  CHECK(cfg.jobs.at("j").processing.analyze);
  CHECK(cfg.settings.at("jobs.j.analyze").origin == Origin::file);
  CHECK(error_of("[processing]\nanalyze = 1\n") == "t.toml:2: processing.analyze must be true or false");
  Config job = load_string(std::string(k_job) + "analyze = true\n", "t.toml", {});
  CHECK(job.jobs.at("j").processing.analyze);
  CHECK_FALSE(job.processing.analyze);
  CHECK(job.settings.at("jobs.j.analyze").origin == Origin::job_block);
  Overrides o;
  o.progress_interval = 5;
  Config flagged = load("", o);
  CHECK(flagged.jobs.at("j").processing.progress_interval == doctest::Approx(5));
  CHECK(flagged.settings.at("jobs.j.progress_interval").origin == Origin::flag);
}

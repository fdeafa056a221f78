// The end-of-run hooks (app/hooks.h): which hooks an outcome calls, and the environment a hook sees (the outcome,
// and no secret); and [hooks] in the config with the --on-* flags over it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "app/hooks.h"
#include "config/config.h"
#include "helpers.h"
#include "util/error.h"

using goarchive::app::hook_environment;
using goarchive::app::HookOutcome;
using goarchive::app::hooks_for;
using goarchive::app::secret_variables;

namespace {

const char* const k_config = R"([source]
host = "db1"
user = "u"
password_env = "SRC_SECRET"
database = "shop"
[destination]
host = "db2"
user = "u"
password_env = "DST_SECRET"
database = "shop_archive"
[hooks]
on_success = "echo ok"
on_end = "logger done"
timeout = 5
[jobs.j]
root_table = "orders"
where = "1=1"
)";

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool names(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

}  // namespace

TEST_CASE("hooks: each exit code calls its hook, and on_end always") {
  CHECK(hooks_for(0, 0) == std::vector<std::string>{"on_success", "on_end"});
  CHECK(hooks_for(1, 0) == std::vector<std::string>{"on_failure", "on_end"});
  CHECK(hooks_for(1, 3) == std::vector<std::string>{"on_conflict", "on_end"});
  CHECK(hooks_for(2, 0) == std::vector<std::string>{"on_failure", "on_end"});
  CHECK(hooks_for(4, 0) == std::vector<std::string>{"on_busy", "on_end"});
  CHECK(hooks_for(130, 0) == std::vector<std::string>{"on_end"});
  CHECK(hooks_for(143, 0) == std::vector<std::string>{"on_end"});
}

TEST_CASE("hooks: [hooks] is read with its origins, and a flag wins over the file") {
  std::map<std::string, std::string> env = {{"SRC_SECRET", "s3cret"}, {"DST_SECRET", "other"}};
  goarchive::config::Overrides o;
  o.hooks["on_busy"] = "  page-someone  ";
  auto cfg = goarchive::config::load_string(k_config, "t.toml", env, o);
  CHECK(cfg.hooks.on_success == "echo ok");
  CHECK(cfg.hooks.on_end == "logger done");
  CHECK(cfg.hooks.on_busy == "page-someone");
  CHECK(cfg.hooks.on_failure.empty());
  CHECK(cfg.hooks.timeout == 5);
  CHECK(cfg.settings.at("hooks.on_success").origin == goarchive::config::Origin::file);
  CHECK(cfg.settings.at("hooks.on_busy").origin == goarchive::config::Origin::flag);
  CHECK(cfg.settings.at("hooks.on_conflict").origin == goarchive::config::Origin::default_value);
  CHECK(secret_variables(cfg) == std::set<std::string>{"DST_SECRET", "SRC_SECRET"});
  std::string bad = std::string(k_config).replace(std::string(k_config).find("timeout = 5"), 11, "on_sucess = 1");
  CHECK(goarchive::test::message_of<goarchive::ConfigError>([&] {
          goarchive::config::load_string(bad, "t.toml", env);
        }).find("unknown key hooks.on_sucess") != std::string::npos);
}

TEST_CASE("hooks: the environment has the outcome and no secret") {
  HookOutcome o;
  o.job = "old_orders";
  o.command = "archive";
  o.reason = "finished";
  o.exit_code = 0;
  o.run_id = 42;
  o.conflicts = 0;
  o.blocked = 2;
  o.copied = {{"orders", 10}, {"order_items", 30}};
  o.deleted = {{"orders", 10}, {"order_items", 30}};
  std::map<std::string, std::string> base = {{"PATH", "/usr/bin"},        {"SRC_SECRET", "s3cret"},
                                             {"MYSQL_PWD", "x"},           {"APP_DB_PASSWORD", "y"},
                                             {"GOARCHIVE_JOB", "spoofed"}, {"GOARCHIVE_SOURCE_PASSWORD", "z"},
                                             {"HOME", "/root"}};
  auto env = hook_environment(base, {"SRC_SECRET"}, o, "on_success", "/tmp/s.json");
  CHECK(has(env, "PATH=/usr/bin"));
  CHECK(has(env, "HOME=/root"));
  for (const char* secret : {"SRC_SECRET", "MYSQL_PWD", "APP_DB_PASSWORD", "GOARCHIVE_SOURCE_PASSWORD"}) {
    CAPTURE(secret);
    CHECK_FALSE(names(env, secret));
  }
  CHECK(has(env, "GOARCHIVE_HOOK=on_success"));
  CHECK(has(env, "GOARCHIVE_JOB=old_orders"));
  CHECK_FALSE(has(env, "GOARCHIVE_JOB=spoofed"));
  CHECK(has(env, "GOARCHIVE_COMMAND=archive"));
  CHECK(has(env, "GOARCHIVE_EXIT_CODE=0"));
  CHECK(has(env, "GOARCHIVE_REASON=finished"));
  CHECK(has(env, "GOARCHIVE_RUN_ID=42"));
  CHECK(has(env, "GOARCHIVE_CONFLICTS=0"));
  CHECK(has(env, "GOARCHIVE_BLOCKED=2"));
  CHECK(has(env, "GOARCHIVE_ROWS_COPIED=orders=10,order_items=30"));
  CHECK(has(env, "GOARCHIVE_ROWS_DELETED=orders=10,order_items=30"));
  CHECK(has(env, "GOARCHIVE_SUMMARY_JSON=/tmp/s.json"));
}

// Unit tests of lib/config: loading, defaults, precedence, validation of names and `where`.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "config/config.h"
#include "config/identifiers.h"
#include "helpers.h"
#include "util/error.h"

using goarchive::ConfigError;
using goarchive::config::Config;
using goarchive::config::load_string;
using goarchive::config::Origin;
using goarchive::config::Overrides;
using goarchive::config::TlsMode;
using goarchive::config::VerifyMethod;
using goarchive::test::message_of;

namespace {

using Env = std::map<std::string, std::string>;

Config load(const std::string& text, const Env& env = {}, const Overrides& o = {}) {
  return load_string(text, "t.toml", env, o);
}

// The message of the ConfigError that loading `text` throws.
std::string error_of(const std::string& text, const Env& env = {}, const Overrides& o = {}) {
  return message_of<ConfigError>([&] { (void)load(text, env, o); });
}

// A minimal valid job block after `extra` lines (so tests can prepend sections).
std::string with_job(const std::string& extra, const std::string& job_lines = "") {
  return extra + "\n[jobs.j]\nroot_table = \"orders\"\nwhere = \"1=1\"\n" + job_lines;
}

// A job whose `where` is `condition` (written as a TOML literal string so no escaping is needed).
std::string job_with_where(const std::string& condition) {
  return "[jobs.j]\nroot_table = \"orders\"\nwhere = '''" + condition + "'''\n";
}

// A temporary file holding `content` with `mode`, removed at scope exit.
struct TempFile {
  std::string path;
  TempFile(const std::string& content, mode_t mode) {
    char tmpl[] = "/tmp/goarchive_unit_XXXXXX";
    int fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    path = tmpl;
    REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
    REQUIRE(::chmod(path.c_str(), mode) == 0);
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

const char* k_full = R"TOML([source]
host = "src.example"
port = 3316
user = "archiver"
password = "s3cret-src"
database = "shop"
tls = "verify-ca"
tls_ca = "/etc/ssl/ca.pem"
connect_timeout = 5

[destination]
host = "dst.example"
port = 3317
user = "archiver2"
password_env = "DST_PW"
database = "shop_archive"
job_schema = "ga_registry"
foreign_key_checks = false
tls = "disabled"

[processing]
batch_size = 250
delete_batch_size = 100
sleep = 0.5
sentinel_file = "/tmp/pause"

[verification]
method = "count"

[replication]
enabled = true
max_lag_seconds = 30
check_interval = 2
[[replication.servers]]
host = "replica1"
port = 3308
user = "monitor"
[[replication.servers]]
host = "replica2"
port = 3309
user = "monitor"
password = "monpw"

[logging]
level = "debug"
format = "json"
file = "/var/log/goarchive.log"

[jobs.archive_old_orders]
root_table = "orders"
where = "created_at < NOW() - INTERVAL 2 YEAR"
primary_key = ["id"]
batch_size = 50
verification = "none"

[[jobs.archive_old_orders.relations]]
table = "order_items"
foreign_key = "order_id"

[[jobs.archive_old_orders.relations]]
table = "shipments"
foreign_key = ["order_id", "order_region"]
references = ["id", "region"]

[[jobs.archive_old_orders.relations]]
table = "shipment_items"
parent = "shipments"
foreign_key = "shipment_id"
references = "id"

[jobs.purge_logs]
root_table = "logs"
where = "1=1"
)TOML";

}  // namespace

TEST_CASE("config: a full file per DESIGN.md section 4 loads with every value") {
  Config cfg = load(k_full, Env{{"DST_PW", "s3cret-dst"}});
  CHECK(cfg.path == "t.toml");

  CHECK(cfg.source.role == "source");
  CHECK(cfg.source.host == "src.example");
  CHECK(cfg.source.port == 3316);
  CHECK(cfg.source.user == "archiver");
  CHECK(cfg.source.password.reveal() == "s3cret-src");
  CHECK(cfg.source.password_origin == "password");
  CHECK(cfg.source.database == "shop");
  CHECK(cfg.source.tls == TlsMode::verify_ca);
  CHECK(cfg.source.tls_ca == "/etc/ssl/ca.pem");
  CHECK(cfg.source.connect_timeout == doctest::Approx(5));
  CHECK(cfg.source.display() == "archiver@src.example:3316");

  CHECK(cfg.destination.role == "destination");
  CHECK(cfg.destination.host == "dst.example");
  CHECK(cfg.destination.port == 3317);
  CHECK(cfg.destination.user == "archiver2");
  CHECK(cfg.destination.password.reveal() == "s3cret-dst");
  CHECK(cfg.destination.password_origin == "password_env DST_PW");
  CHECK(cfg.destination.password_error.empty());
  CHECK(cfg.destination.database == "shop_archive");
  CHECK(cfg.destination.job_schema == "ga_registry");
  CHECK_FALSE(cfg.destination.foreign_key_checks);
  CHECK(cfg.destination.tls == TlsMode::disabled);

  CHECK(cfg.processing.batch_size == 250);
  CHECK(cfg.processing.delete_batch_size == 100);
  CHECK(cfg.processing.sleep == doctest::Approx(0.5));
  CHECK(cfg.processing.sentinel_file == "/tmp/pause");
  CHECK(cfg.processing.verification == VerifyMethod::count);

  CHECK(cfg.replication.enabled);
  CHECK(cfg.replication.max_lag_seconds == doctest::Approx(30));
  CHECK(cfg.replication.check_interval == doctest::Approx(2));
  REQUIRE(cfg.replication.servers.size() == 2);
  CHECK(cfg.replication.servers[0].role == "replication.servers[0]");
  CHECK(cfg.replication.servers[0].host == "replica1");
  CHECK(cfg.replication.servers[0].port == 3308);
  CHECK(cfg.replication.servers[0].user == "monitor");
  CHECK(cfg.replication.servers[1].host == "replica2");
  CHECK(cfg.replication.servers[1].port == 3309);
  CHECK(cfg.replication.servers[1].password.reveal() == "monpw");

  CHECK(cfg.logging.level == "debug");
  CHECK(cfg.logging.format == "json");
  CHECK(cfg.logging.file == "/var/log/goarchive.log");

  REQUIRE(cfg.jobs.size() == 2);
  const auto& job = cfg.job("archive_old_orders");
  CHECK(job.name == "archive_old_orders");
  CHECK(job.root_table == "orders");
  CHECK(job.where == "created_at < NOW() - INTERVAL 2 YEAR");
  CHECK(job.primary_key == std::vector<std::string>{"id"});
  CHECK(job.processing.batch_size == 50);
  CHECK(job.processing.delete_batch_size == 100);  // inherited from [processing]
  CHECK(job.processing.sleep == doctest::Approx(0.5));
  CHECK(job.processing.sentinel_file == "/tmp/pause");
  CHECK(job.processing.verification == VerifyMethod::none);
  REQUIRE(job.relations.size() == 3);
  CHECK(job.relations[0].table == "order_items");
  CHECK(job.relations[0].parent.empty());
  CHECK(job.relations[0].foreign_key == std::vector<std::string>{"order_id"});
  CHECK(job.relations[0].references.empty());
  CHECK(job.relations[1].table == "shipments");
  CHECK(job.relations[1].parent.empty());
  CHECK(job.relations[1].foreign_key == std::vector<std::string>{"order_id", "order_region"});
  CHECK(job.relations[1].references == std::vector<std::string>{"id", "region"});
  CHECK(job.relations[2].table == "shipment_items");
  CHECK(job.relations[2].parent == "shipments");
  CHECK(job.relations[2].foreign_key == std::vector<std::string>{"shipment_id"});
  CHECK(job.relations[2].references == std::vector<std::string>{"id"});

  const auto& purge = cfg.job("purge_logs");
  CHECK(purge.root_table == "logs");
  CHECK(purge.where == "1=1");
  CHECK(purge.primary_key.empty());
  CHECK(purge.relations.empty());
  CHECK(purge.processing.batch_size == 250);
  CHECK(purge.processing.verification == VerifyMethod::count);

  CHECK(cfg.settings.at("source.host").value == "src.example");
  CHECK(cfg.settings.at("source.host").origin == Origin::file);
  CHECK(cfg.settings.at("destination.job_schema").value == "ga_registry");
  CHECK(cfg.settings.at("destination.job_schema").origin == Origin::file);
  CHECK(cfg.settings.at("destination.foreign_key_checks").value == "false");
  CHECK(cfg.settings.at("jobs.archive_old_orders.where").value == "created_at < NOW() - INTERVAL 2 YEAR");
}

TEST_CASE("config: passwords never appear in the settings or in errors") {
  Config cfg = load(k_full, Env{{"DST_PW", "s3cret-dst"}});
  for (const auto& [key, setting] : cfg.settings) {
    CAPTURE(key);
    CHECK(setting.value.find("s3cret") == std::string::npos);
    CHECK(setting.value.find("monpw") == std::string::npos);
  }
  for (const char* text : {"[source]\npassword = \"hunter2\" x\n", "[source]\npassword = \"hunter2\npassword_env = \"X\"\n",
                           "[source]\npassword = \"hunter2\"\npassword_env = \"X\"\n"}) {
    CAPTURE(text);
    std::string msg = error_of(text);
    CHECK(msg.find("t.toml") != std::string::npos);
    CHECK(msg.find("hunter2") == std::string::npos);
  }
}

TEST_CASE("config: built-in defaults") {
  Config cfg = load(with_job(""));
  CHECK(cfg.processing.batch_size == 1000);
  CHECK(cfg.processing.delete_batch_size == 500);
  CHECK(cfg.processing.sleep == doctest::Approx(0.0));
  CHECK(cfg.processing.sentinel_file.empty());
  CHECK(cfg.processing.verification == VerifyMethod::sha256);
  CHECK(cfg.destination.job_schema == "goarchive");
  CHECK(cfg.destination.foreign_key_checks);
  CHECK(cfg.source.host == "127.0.0.1");
  CHECK(cfg.source.port == 3306);
  CHECK(cfg.source.tls == TlsMode::preferred);
  CHECK_FALSE(cfg.replication.enabled);
  CHECK(cfg.logging.level == "info");
  CHECK(cfg.logging.format == "text");

  const auto& job = cfg.job("j");
  CHECK(job.processing.batch_size == 1000);
  CHECK(job.processing.delete_batch_size == 500);
  CHECK(job.processing.verification == VerifyMethod::sha256);

  CHECK(cfg.settings.at("processing.batch_size").value == "1000");
  CHECK(cfg.settings.at("processing.batch_size").origin == Origin::default_value);
  CHECK(cfg.settings.at("jobs.j.batch_size").value == "1000");
  CHECK(cfg.settings.at("jobs.j.batch_size").origin == Origin::default_value);
  CHECK(cfg.settings.at("jobs.j.verification").value == "sha256");
  CHECK(cfg.settings.at("destination.job_schema").value == "goarchive");
  CHECK(cfg.settings.at("destination.job_schema").origin == Origin::default_value);
}

TEST_CASE("config: a job block overrides [processing] and records origin job_block") {
  Config cfg = load("[processing]\nbatch_size = 200\n"
                    "[jobs.a]\nroot_table = \"t\"\nwhere = \"1=1\"\nbatch_size = 50\n"
                    "[jobs.b]\nroot_table = \"t\"\nwhere = \"1=1\"\n");
  CHECK(cfg.processing.batch_size == 200);
  CHECK(cfg.job("a").processing.batch_size == 50);
  CHECK(cfg.job("b").processing.batch_size == 200);
  CHECK(cfg.settings.at("processing.batch_size").origin == Origin::file);
  CHECK(cfg.settings.at("jobs.a.batch_size").value == "50");
  CHECK(cfg.settings.at("jobs.a.batch_size").origin == Origin::job_block);
  CHECK(cfg.settings.at("jobs.b.batch_size").value == "200");
  CHECK(cfg.settings.at("jobs.b.batch_size").origin == Origin::file);
  CHECK(std::string(goarchive::config::to_string(Origin::job_block)) == "job block");
}

TEST_CASE("config: GOARCHIVE_BATCH_SIZE overrides the job block") {
  Config cfg = load(with_job("", "batch_size = 50\n"), Env{{"GOARCHIVE_BATCH_SIZE", "77"}});
  CHECK(cfg.job("j").processing.batch_size == 77);
  CHECK(cfg.settings.at("jobs.j.batch_size").value == "77");
  CHECK(cfg.settings.at("jobs.j.batch_size").origin == Origin::environment);
}

TEST_CASE("config: a bad GOARCHIVE_BATCH_SIZE is refused") {
  CHECK_THROWS_AS(load(with_job(""), Env{{"GOARCHIVE_BATCH_SIZE", "abc"}}), ConfigError);
  CHECK_THROWS_AS(load(with_job(""), Env{{"GOARCHIVE_BATCH_SIZE", "0"}}), ConfigError);
  CHECK_THROWS_AS(load(with_job(""), Env{{"GOARCHIVE_BATCH_SIZE", "12x"}}), ConfigError);
  CHECK(error_of(with_job(""), Env{{"GOARCHIVE_BATCH_SIZE", "abc"}}).find("GOARCHIVE_BATCH_SIZE") !=
        std::string::npos);
}

TEST_CASE("config: command-line overrides beat the environment") {
  Overrides o;
  o.batch_size = 99;
  o.sleep = 2.5;
  Config cfg = load(with_job("", "batch_size = 50\nsleep = 1\n"),
                    Env{{"GOARCHIVE_BATCH_SIZE", "77"}, {"GOARCHIVE_SLEEP", "3"}}, o);
  const auto& p = cfg.job("j").processing;
  CHECK(p.batch_size == 99);
  CHECK(p.sleep == doctest::Approx(2.5));
  CHECK(cfg.settings.at("jobs.j.batch_size").value == "99");
  CHECK(cfg.settings.at("jobs.j.batch_size").origin == Origin::flag);
  CHECK(cfg.settings.at("jobs.j.sleep").origin == Origin::flag);
}

TEST_CASE("config: environment overrides server keys and job_schema") {
  Config cfg = load(with_job("[source]\nhost = \"a\"\n[destination]\njob_schema = \"x\"\n"),
                    Env{{"GOARCHIVE_SOURCE_HOST", "b"},
                        {"GOARCHIVE_SOURCE_PORT", "3399"},
                        {"GOARCHIVE_SOURCE_PASSWORD", "pw"},
                        {"GOARCHIVE_JOB_SCHEMA", "envschema"}});
  CHECK(cfg.source.host == "b");
  CHECK(cfg.source.port == 3399);
  CHECK(cfg.source.password.reveal() == "pw");
  CHECK(cfg.settings.at("source.host").origin == Origin::environment);
  CHECK(cfg.settings.at("source.port").origin == Origin::environment);
  CHECK(cfg.destination.job_schema == "envschema");
  CHECK(cfg.settings.at("destination.job_schema").origin == Origin::environment);
  CHECK_THROWS_AS(load(with_job(""), Env{{"GOARCHIVE_SOURCE_PORT", "70000"}}), ConfigError);
}

TEST_CASE("config: logging level from environment, flag beats it, unknown level refused") {
  CHECK(load(with_job(""), Env{{"GOARCHIVE_LOG_LEVEL", "warn"}}).logging.level == "warn");
  Overrides o;
  o.log_level = "error";
  CHECK(load(with_job(""), Env{{"GOARCHIVE_LOG_LEVEL", "warn"}}, o).logging.level == "error");
  CHECK_THROWS_AS(load(with_job("[logging]\nlevel = \"verbose\"\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[logging]\nformat = \"xml\"\n")), ConfigError);
}

TEST_CASE("config: logging and replication settings carry their real origin") {
  // DESIGN.md section 4: `validate -v` prints every effective value with its origin.
  Config cfg = load(with_job("[replication]\nenabled = false\n"));
  CHECK(cfg.settings.at("logging.level").origin == Origin::default_value);
  CHECK(cfg.settings.at("logging.format").origin == Origin::default_value);
  CHECK(cfg.settings.at("replication.max_lag_seconds").origin == Origin::default_value);
  Config env_cfg = load(with_job(""), Env{{"GOARCHIVE_LOG_LEVEL", "warn"}});
  CHECK(env_cfg.settings.at("logging.level").origin == Origin::environment);
}

TEST_CASE("config: password, password_env and password_file") {
  SUBCASE("password") {
    Config cfg = load(with_job("[source]\npassword = \"pw1\"\n"));
    CHECK(cfg.source.password.reveal() == "pw1");
    CHECK(cfg.source.password_origin == "password");
  }
  SUBCASE("password_env set") {
    Config cfg = load(with_job("[source]\npassword_env = \"MY_PW\"\n"), Env{{"MY_PW", "pw2"}});
    CHECK(cfg.source.password.reveal() == "pw2");
    CHECK(cfg.source.password_origin == "password_env MY_PW");
    CHECK(cfg.source.password_error.empty());
  }
  SUBCASE("password_env unset: no error until a connection needs it") {
    Config cfg = load(with_job("[source]\npassword_env = \"MY_PW\"\n"));
    CHECK(cfg.source.password.empty());
    CHECK(cfg.source.password_error.find("MY_PW") != std::string::npos);
  }
  SUBCASE("password_file with mode 0600") {
    TempFile f("pw3\nsecond line\n", 0600);
    Config cfg = load(with_job("[source]\npassword_file = \"" + f.path + "\"\n"));
    CHECK(cfg.source.password.reveal() == "pw3");
    CHECK(cfg.source.password_origin == "password_file " + f.path);
  }
  SUBCASE("password_file with CRLF") {
    TempFile f("pw4\r\n", 0600);
    Config cfg = load(with_job("[source]\npassword_file = \"" + f.path + "\"\n"));
    CHECK(cfg.source.password.reveal() == "pw4");
  }
  SUBCASE("password_file with mode 0644 is refused") {
    TempFile f("pw5\n", 0644);
    std::string text = with_job("[source]\npassword_file = \"" + f.path + "\"\n");
    CHECK_THROWS_AS(load(text), ConfigError);
    std::string msg = error_of(text);
    CHECK(msg.find("chmod 600") != std::string::npos);
    CHECK(msg.find(f.path) != std::string::npos);
    CHECK(msg.find("pw5") == std::string::npos);
  }
  SUBCASE("password_file missing") {
    CHECK_THROWS_AS(load(with_job("[source]\npassword_file = \"/nonexistent/goarchive/pw\"\n")), ConfigError);
  }
  SUBCASE("two password sources") {
    std::string text = with_job("[destination]\npassword = \"a\"\npassword_env = \"B\"\n");
    CHECK_THROWS_AS(load(text, Env{{"B", "b"}}), ConfigError);
    std::string msg = error_of(text, Env{{"B", "b"}});
    CHECK(msg.find("destination") != std::string::npos);
    CHECK(msg.find("password") != std::string::npos);
  }
}

TEST_CASE("config: an unknown key names the key and its line") {
  SUBCASE("in a section") {
    std::string text = with_job("[source]\nhost = \"h\"\nhots = \"x\"\n");
    CHECK_THROWS_AS(load(text), ConfigError);
    std::string msg = error_of(text);
    CHECK(msg.find("hots") != std::string::npos);
    CHECK(msg.find("t.toml:3") != std::string::npos);
  }
  SUBCASE("in a job") {
    std::string text = with_job("", "wher = \"x\"\n");
    // lines: 1 "", 2 [jobs.j], 3 root_table, 4 where, 5 wher
    std::string msg = error_of(text);
    CHECK(msg.find("wher") != std::string::npos);
    CHECK(msg.find("t.toml:5") != std::string::npos);
  }
  SUBCASE("in a relation") {
    std::string text = with_job("",
                                "[[jobs.j.relations]]\n"   // 5
                                "table = \"items\"\n"      // 6
                                "foreign_key = \"oid\"\n"  // 7
                                "colour = \"red\"\n");     // 8
    std::string msg = error_of(text);
    CHECK(msg.find("colour") != std::string::npos);
    CHECK(msg.find("t.toml:8") != std::string::npos);
  }
  SUBCASE("at the top level") {
    std::string msg = error_of("speed = 3\n" + with_job(""));
    CHECK(msg.find("speed") != std::string::npos);
    CHECK(msg.find("t.toml:1") != std::string::npos);
  }
}

TEST_CASE("config: a ConfigError exits with code 2") {
  try {
    (void)load(with_job("[source]\nbogus = 1\n"));
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.exit_code() == 2);
  }
}

TEST_CASE("config: a value of the wrong type names the key and its line") {
  std::string text = "[processing]\nbatch_size = \"10\"\n" + with_job("");
  CHECK_THROWS_AS(load(text), ConfigError);
  std::string msg = error_of(text);
  CHECK(msg.find("batch_size") != std::string::npos);
  CHECK(msg.find("t.toml:2") != std::string::npos);

  std::string job_text = with_job("", "batch_size = \"10\"\n");
  std::string job_msg = error_of(job_text);
  CHECK(job_msg.find("jobs.j.batch_size") != std::string::npos);
  CHECK(job_msg.find("t.toml:5") != std::string::npos);

  CHECK_THROWS_AS(load(with_job("[source]\nport = \"3306\"\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[destination]\nforeign_key_checks = \"no\"\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\ntable = \"i\"\nforeign_key = 3\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\ntable = \"i\"\nforeign_key = []\n")), ConfigError);
}

TEST_CASE("config: out-of-range values are refused") {
  for (const char* v : {"0", "-5", "10000000"}) {
    CAPTURE(v);
    std::string text = with_job("", std::string("batch_size = ") + v + "\n");
    CHECK_THROWS_AS(load(text), ConfigError);
    std::string msg = error_of(text);
    CHECK(msg.find("batch_size") != std::string::npos);
    CHECK(msg.find("t.toml:5") != std::string::npos);
    CHECK_THROWS_AS(load("[processing]\ndelete_batch_size = " + std::string(v) + "\n" + with_job("")), ConfigError);
  }
  CHECK_THROWS_AS(load(with_job("[source]\nport = 0\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[source]\nport = 65536\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[processing]\nsleep = -1\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[processing]\nsleep = nan\n")), ConfigError);
  CHECK_NOTHROW(load(with_job("", "batch_size = 100000\n")));
}

TEST_CASE("config: root_table and where are required") {
  std::string no_root = "[jobs.j]\nwhere = \"1=1\"\n";
  CHECK_THROWS_AS(load(no_root), ConfigError);
  CHECK(error_of(no_root).find("root_table") != std::string::npos);
  std::string no_where = "[jobs.j]\nroot_table = \"t\"\n";
  CHECK_THROWS_AS(load(no_where), ConfigError);
  CHECK(error_of(no_where).find("where") != std::string::npos);
  CHECK_THROWS_AS(load(job_with_where("   ")), ConfigError);
}

TEST_CASE("config: a relation needs table and foreign_key, and matching references") {
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\nforeign_key = \"x\"\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\ntable = \"i\"\n")), ConfigError);
  CHECK_THROWS_AS(
      load(with_job("", "[[jobs.j.relations]]\ntable = \"i\"\nforeign_key = [\"a\", \"b\"]\nreferences = \"id\"\n")),
      ConfigError);
}

TEST_CASE("config: a TOML syntax error names its line") {
  std::string text = "[source]\nhost = \"a\"\nport = = 3\n";
  CHECK_THROWS_AS(load(text), ConfigError);
  std::string msg = error_of(text);
  CHECK(msg.find("t.toml:3") != std::string::npos);
  CHECK(msg.find("syntax") != std::string::npos);
  CHECK_THROWS_AS(load(std::string("a = 1\0", 6)), ConfigError);
}

TEST_CASE("config: tls modes") {
  CHECK_THROWS_AS(load(with_job("[source]\ntls = \"on\"\n")), ConfigError);
  CHECK(error_of(with_job("[source]\ntls = \"on\"\n")).find("t.toml:2") != std::string::npos);
  std::string no_ca = with_job("[source]\ntls = \"verify-ca\"\n");
  CHECK_THROWS_AS(load(no_ca), ConfigError);
  CHECK(error_of(no_ca).find("tls_ca") != std::string::npos);
  CHECK_THROWS_AS(load(with_job("[destination]\ntls = \"verify-identity\"\n")), ConfigError);
  CHECK(load(with_job("[source]\ntls = \"required\"\n")).source.tls == TlsMode::required);
  CHECK(load(with_job("[source]\ntls = \"verify-identity\"\ntls_ca = \"/ca.pem\"\n")).source.tls ==
        TlsMode::verify_identity);
}

TEST_CASE("config: server_public_key (caching_sha2_password without TLS) must be a readable file") {
  TempFile key("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n", 0644);
  auto cfg = load(with_job("[source]\nserver_public_key = \"" + key.path + "\"\n"));
  CHECK(cfg.source.server_public_key == key.path);
  CHECK(cfg.settings.at("source.server_public_key").value == key.path);
  CHECK(cfg.destination.server_public_key.empty());
  std::string msg = error_of(with_job("[destination]\nserver_public_key = \"/nonexistent/key.pem\"\n"));
  CHECK(msg.find("destination.server_public_key = \"/nonexistent/key.pem\" cannot be read") != std::string::npos);
  CHECK(msg.find("t.toml:2") != std::string::npos);
}

TEST_CASE("config: replication enabled without servers is refused") {
  CHECK_THROWS_AS(load(with_job("[replication]\nenabled = true\n")), ConfigError);
}

TEST_CASE("config: unknown verification method is refused") {
  CHECK_THROWS_AS(load(with_job("[verification]\nmethod = \"md5\"\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("", "verification = \"crc\"\n")), ConfigError);
}

TEST_CASE("config: job names are restricted") {
  std::string text = "[jobs.\"bad name\"]\nroot_table = \"t\"\nwhere = \"1=1\"\n";
  CHECK_THROWS_AS(load(text), ConfigError);
  CHECK(error_of(text).find("bad name") != std::string::npos);
  CHECK_THROWS_AS(load("[jobs.\"a*/b\"]\nroot_table = \"t\"\nwhere = \"1=1\"\n"), ConfigError);
  CHECK_THROWS_AS(load("[jobs.\"\"]\nroot_table = \"t\"\nwhere = \"1=1\"\n"), ConfigError);
  CHECK_NOTHROW(load("[jobs.\"a.b-c_D9\"]\nroot_table = \"t\"\nwhere = \"1=1\"\n"));
  CHECK_THROWS_AS(goarchive::config::check_job_name(std::string(65, 'a'), "here"), ConfigError);
  CHECK_NOTHROW(goarchive::config::check_job_name(std::string(64, 'a'), "here"));
}

TEST_CASE("config: an unknown job name lists the known jobs") {
  Config cfg = load(with_job(""));
  CHECK_THROWS_AS(cfg.job("nope"), ConfigError);
  std::string msg = message_of<ConfigError>([&] { (void)cfg.job("nope"); });
  CHECK(msg.find("nope") != std::string::npos);
  CHECK(msg.find("jobs are: j") != std::string::npos);
}

TEST_CASE("config: identifiers with NUL or newline are refused") {
  CHECK_THROWS_AS(load("[jobs.j]\nroot_table = \"ord\\u0000ers\"\nwhere = \"1=1\"\n"), ConfigError);
  CHECK_THROWS_AS(load("[jobs.j]\nroot_table = \"ord\\ners\"\nwhere = \"1=1\"\n"), ConfigError);
  CHECK_THROWS_AS(load("[jobs.j]\nroot_table = \"ord\\ters\"\nwhere = \"1=1\"\n"), ConfigError);
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\ntable = \"it\\nems\"\nforeign_key = \"oid\"\n")),
                  ConfigError);
  CHECK_THROWS_AS(load(with_job("", "[[jobs.j.relations]]\ntable = \"items\"\nforeign_key = \"o\\u0000id\"\n")),
                  ConfigError);
  CHECK_THROWS_AS(load(with_job("", "primary_key = [\"i\\nd\"]\n")), ConfigError);
  CHECK_THROWS_AS(load(with_job("[destination]\njob_schema = \"ga\\nx\"\n")), ConfigError);
  std::string msg = error_of("[jobs.j]\nroot_table = \"ord\\ners\"\nwhere = \"1=1\"\n");
  CHECK(msg.find("root_table") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);  // the newline is shown escaped
}

TEST_CASE("config: identifiers with backticks, quotes and non-ASCII are accepted") {
  Config cfg = load(
      "[jobs.j]\nroot_table = \"or`ders\"\nwhere = \"1=1\"\n"
      "[[jobs.j.relations]]\ntable = \"it'em\\\"s\"\nforeign_key = \"o`id\"\n"
      "[[jobs.j.relations]]\ntable = \"t\u00e9st\u65e5\"\nforeign_key = \"\u00fcid\"\n");
  const auto& job = cfg.job("j");
  CHECK(job.root_table == "or`ders");
  REQUIRE(job.relations.size() == 2);
  CHECK(job.relations[0].table == "it'em\"s");
  CHECK(job.relations[0].foreign_key[0] == "o`id");
  CHECK(job.relations[1].table == "t\u00e9st\u65e5");
}

TEST_CASE("config: identifiers outside the Basic Multilingual Plane are refused") {
  // MySQL and MariaDB store names in utf8mb3: a 4-byte character such as an emoji cannot be a table name.
  std::string msg = error_of(with_job("", "[[jobs.j.relations]]\ntable = \"t\xF0\x9F\x98\x80\"\nforeign_key = \"id\"\n"));
  CHECK(msg.find("Basic Multilingual Plane") != std::string::npos);
  CHECK(msg.find("relations[0].table") != std::string::npos);
}

TEST_CASE("config: identifier length and trailing space") {
  using goarchive::config::check_identifier;
  std::string e_acute = "\u00e9";
  std::string name64, name65;
  for (int i = 0; i < 64; ++i) name64 += e_acute;  // 64 characters, 128 bytes
  name65 = name64 + "x";
  CHECK_NOTHROW(check_identifier(name64, "k"));
  CHECK_THROWS_AS(check_identifier(name65, "k"), ConfigError);
  CHECK_THROWS_AS(check_identifier("", "k"), ConfigError);
  CHECK_THROWS_AS(check_identifier("abc ", "k"), ConfigError);
  CHECK_NOTHROW(check_identifier(" abc", "k"));
  CHECK_THROWS_AS(check_identifier(std::string("a\x7f"), "k"), ConfigError);
}

TEST_CASE("config: where conditions that could escape their parentheses are refused") {
  for (const char* w : {"1=1; DROP TABLE x", "1=1 -- x", "1=1 # x", "1=1 /* x */", "1=1 */", "a = 'unclosed",
                        "a = \"unclosed", "`a = 1", "(a = 1", "a = 1)", "a = 1) OR (1=1", "a--1 > 0",
                        "a = 'x\\' OR 1=1; --"}) {
    CAPTURE(w);
    CHECK_THROWS_AS(load(job_with_where(w)), ConfigError);
    CHECK(error_of(job_with_where(w)).find("jobs.j.where") != std::string::npos);
  }
  CHECK(error_of(job_with_where("1=1; DROP TABLE x")).find("';'") != std::string::npos);
  CHECK(error_of(job_with_where("1=1 -- x")).find("'--'") != std::string::npos);
  CHECK(error_of(job_with_where("(a = 1")).find("parenthesis") != std::string::npos);
  CHECK(error_of(job_with_where("a = 'unclosed")).find("quote") != std::string::npos);
}

TEST_CASE("config: where conditions that are one expression are accepted") {
  for (const char* w : {"note = 'it''s; fine -- here'", "created_at < NOW() - INTERVAL 2 YEAR", "a - -1 > 0",
                        "1=1", "(a = 1 OR b = 2) AND c IN (1, 2)", "`we;ird` = \"x#y\"", "a = 'back\\'slash; ok'",
                        "a / 2 > b * 3"}) {
    CAPTURE(w);
    CHECK_NOTHROW(load(job_with_where(w)));
  }
  CHECK(load(job_with_where("note = 'it''s; fine -- here'")).job("j").where == "note = 'it''s; fine -- here'");
}

TEST_CASE("config: [source] allow_replica defaults to false, is read as a boolean and only in [source]") {
  Config cfg = load(with_job(""));
  CHECK_FALSE(cfg.source.allow_replica);
  CHECK(cfg.settings.at("source.allow_replica").value == "false");
  CHECK(cfg.settings.at("source.allow_replica").origin == Origin::default_value);
  cfg = load(with_job("[source]\nhost = \"h\"\nallow_replica = true\n"));
  CHECK(cfg.source.allow_replica);
  CHECK(cfg.settings.at("source.allow_replica").value == "true");
  CHECK(cfg.settings.at("source.allow_replica").origin == Origin::file);
  CHECK(error_of(with_job("[source]\nallow_replica = \"yes\"\n")).find("allow_replica") != std::string::npos);
  std::string msg = error_of(with_job("[destination]\nallow_replica = true\n"));
  CHECK(msg.find("unknown key") != std::string::npos);
  CHECK(msg.find("allow_replica") != std::string::npos);
}

TEST_CASE("config: a job's mode (what --all runs it with) defaults to archive and is one of the three commands") {
  auto cfg = load(with_job("", "mode = \"copy-only\"\n"));
  CHECK(cfg.job("j").mode == "copy-only");
  CHECK(cfg.settings.at("jobs.j.mode").origin == Origin::job_block);
  CHECK(load(with_job("")).job("j").mode == "archive");
  CHECK(load(with_job("")).settings.at("jobs.j.mode").origin == Origin::default_value);
  CHECK(error_of(with_job("", "mode = \"restore\"\n")).find("jobs.j.mode = \"restore\" is not a mode; use archive, "
                                                             "copy-only or purge") != std::string::npos);
}

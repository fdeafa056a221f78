// The whole config document: its sections in order, [replication] and [throttle].
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "config/identifiers.h"
#include "config/loader.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::config::detail {

void Loader::set(const std::string& key, std::string value, Origin origin) {
  m_cfg.settings[key] = Setting{std::move(value), origin};
}

void Loader::load(const toml::table& doc, const std::string& path, const Overrides& o) {
  Reader top(doc, "", path);
  read_servers(top, path);
  read_processing_sections(top, path);
  if (const toml::table* t = top.subtable("replication")) read_replication(*t, path);
  read_throttle(top.subtable("throttle"), path, o);
  read_logging(top, path, o);
  read_hooks(top.subtable("hooks"), path, o);
  read_jobs(top, path, o);
  read_control(top.subtable("control"), path);
  top.refuse_unknown();
}

void Loader::read_servers(Reader& top, const std::string& path) {
  if (const toml::table* t = top.subtable("source")) {
    Reader r(*t, "source", path);
    read_source_keys(r, m_cfg.source);  // before read_server, which refuses the keys nobody read
    read_server(r, m_cfg.source, "source", false);
  } else {
    set("source.allow_replica", "false", Origin::default_value);
  }
  if (const toml::table* t = top.subtable("destination")) {
    Reader r(*t, "destination", path);
    read_server(r, m_cfg.destination, "destination", true);
  } else {
    set("destination.job_schema", m_cfg.destination.job_schema, Origin::default_value);
  }
  apply_server_env(m_cfg.source, "source", "GOARCHIVE_SOURCE_");
  apply_server_env(m_cfg.destination, "destination", "GOARCHIVE_DESTINATION_");
  if (auto it = m_env.find("GOARCHIVE_JOB_SCHEMA"); it != m_env.end()) {
    set("destination.job_schema", m_cfg.destination.job_schema = it->second, Origin::environment);
  }
  check_identifier(m_cfg.destination.job_schema, "destination.job_schema");
}

void Loader::read_processing_sections(Reader& top, const std::string& path) {
  if (const toml::table* t = top.subtable("processing")) {
    Reader r(*t, "processing", path);
    read_processing(r, m_cfg.processing, "processing.", Origin::file);
    r.refuse_unknown();
  }
  if (const toml::table* t = top.subtable("verification")) {
    Reader r(*t, "verification", path);
    if (auto v = r.string("method")) {
      m_cfg.processing.verification = parse_method(*v, r.where(*r.get("method")));
      set("processing.verification", *v, Origin::file);
    }
    r.refuse_unknown();
  }
  record_processing(m_cfg.processing, "processing.", Origin::default_value);
}

void Loader::read_logging(Reader& top, const std::string& path, const Overrides& o) {
  set("logging.level", m_cfg.logging.level, Origin::default_value);
  set("logging.format", m_cfg.logging.format, Origin::default_value);
  set("logging.file", m_cfg.logging.file, Origin::default_value);
  if (const toml::table* t = top.subtable("logging")) {
    Reader r(*t, "logging", path);
    if (auto v = r.string("level")) set("logging.level", m_cfg.logging.level = *v, Origin::file);
    if (auto v = r.string("format")) set("logging.format", m_cfg.logging.format = *v, Origin::file);
    if (auto v = r.string("file")) set("logging.file", m_cfg.logging.file = *v, Origin::file);
    r.refuse_unknown();
  }
  auto env_or_flag = [&](const char* var, const std::optional<std::string>& flag, std::string& field,
                         const char* key) {
    if (auto it = m_env.find(var); it != m_env.end()) set(key, field = it->second, Origin::environment);
    if (flag) set(key, field = *flag, Origin::flag);
  };
  env_or_flag("GOARCHIVE_LOG_LEVEL", o.log_level, m_cfg.logging.level, "logging.level");
  env_or_flag("GOARCHIVE_LOG_FORMAT", o.log_format, m_cfg.logging.format, "logging.format");
  env_or_flag("GOARCHIVE_LOG_FILE", o.log_file, m_cfg.logging.file, "logging.file");
  static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error", "off"};
  if (!levels.count(m_cfg.logging.level)) {
    throw ConfigError(fmt::format("logging.level \"{}\" is unknown; use trace, debug, info, warn, error or off",
                                  m_cfg.logging.level));
  }
  if (m_cfg.logging.format != "text" && m_cfg.logging.format != "json") {
    throw ConfigError(fmt::format("logging.format \"{}\" is unknown; use text or json", m_cfg.logging.format));
  }
}

void Loader::read_jobs(Reader& top, const std::string& path, const Overrides& o) {
  if (const toml::table* t = top.subtable("jobs")) {
    Reader jobs(*t, "jobs", path);
    for (const auto& [k, v] : *t) {
      std::string name(k.str());
      const toml::node* n = jobs.get(name);
      if (!n->is_table()) jobs.type_error(name, *n, "a table ([jobs." + name + "])");
      read_job(name, *n->as_table(), path, o);
    }
  }
}

void Loader::read_replication(const toml::table& t, const std::string& path) {
  Reader r(t, "replication", path);
  auto& rc = m_cfg.replication;
  if (auto v = r.boolean("enabled")) rc.enabled = *v;
  if (auto v = r.number("max_lag_seconds", 0, 86400)) rc.max_lag_seconds = *v;
  if (auto v = r.number("check_interval", 0.1, 3600)) rc.check_interval = *v;
  if (auto v = r.number("max_hold", 0, 7 * 86400)) rc.max_hold = *v;
  auto origin = [&](const char* key) { return r.get(key) ? Origin::file : Origin::default_value; };
  set("replication.enabled", rc.enabled ? "true" : "false", origin("enabled"));
  set("replication.max_lag_seconds", fmt::format("{}", rc.max_lag_seconds), origin("max_lag_seconds"));
  set("replication.check_interval", fmt::format("{}", rc.check_interval), origin("check_interval"));
  set("replication.max_hold", fmt::format("{}", rc.max_hold), origin("max_hold"));
  if (const toml::node* servers = r.get("servers")) {
    const toml::array* arr = servers->as_array();
    if (!arr) r.type_error("servers", *servers, "an array of tables ([[replication.servers]])");
    size_t i = 0;
    for (const auto& e : *arr) {
      std::string sp = fmt::format("replication.servers[{}]", i++);
      if (!e.is_table()) throw ConfigError(fmt::format("{}:{}: {} must be a table", path, e.source().begin.line, sp));
      Reader sr(*e.as_table(), sp, path);
      ServerConfig s;
      read_server(sr, s, sp, false);
      if (s.password.empty()) {
        // Replicas usually share the source's monitoring account.
        s.password = m_cfg.source.password;
      }
      rc.servers.push_back(std::move(s));
    }
  }
  if (rc.enabled && rc.servers.empty()) {
    throw ConfigError(fmt::format("{}: replication.enabled = true but no [[replication.servers]] is listed; add the "
                                  "replicas to watch or set enabled = false",
                                  path));
  }
  r.refuse_unknown();
}

void Loader::read_hooks(const toml::table* t, const std::string& path, const Overrides& o) {
  HooksConfig& h = m_cfg.hooks;
  const std::pair<const char*, std::string*> commands[] = {{"on_success", &h.on_success},
                                                           {"on_failure", &h.on_failure},
                                                           {"on_conflict", &h.on_conflict},
                                                           {"on_busy", &h.on_busy},
                                                           {"on_end", &h.on_end}};
  std::set<std::string> in_file;
  if (t) {
    Reader r(*t, "hooks", path);
    if (auto v = r.string("on_success", true)) h.on_success = *v;
    if (auto v = r.string("on_failure", true)) h.on_failure = *v;
    if (auto v = r.string("on_conflict", true)) h.on_conflict = *v;
    if (auto v = r.string("on_busy", true)) h.on_busy = *v;
    if (auto v = r.string("on_end", true)) h.on_end = *v;
    if (auto v = r.number("timeout", 1, 3600)) h.timeout = *v;
    for (const char* k : {"on_success", "on_failure", "on_conflict", "on_busy", "on_end", "timeout"}) {
      if (r.get(k)) in_file.insert(k);
    }
    r.refuse_unknown();
  }
  for (const auto& [key, value] : commands) {
    *value = trim(*value);
    set(std::string("hooks.") + key, *value, in_file.count(key) ? Origin::file : Origin::default_value);
    if (auto it = o.hooks.find(key); it != o.hooks.end()) set(std::string("hooks.") + key, *value = trim(it->second), Origin::flag);
  }
  set("hooks.timeout", fmt::format("{}", h.timeout), in_file.count("timeout") ? Origin::file : Origin::default_value);
}

// [throttle] (optional), then the flags over it, then the checks that need both.
void Loader::read_throttle(const toml::table* t, const std::string& path, const Overrides& o) {
  auto& tc = m_cfg.throttle;
  std::set<std::string> in_file;
  if (t) {
    Reader r(*t, "throttle", path);
    if (auto v = r.integer("max_threads_running", 0, 1000000)) tc.max_threads_running = *v;
    if (auto v = r.integer("critical_threads_running", 0, 1000000)) tc.critical_threads_running = *v;
    if (auto v = r.string("query", true)) tc.query = trim(*v);
    if (auto v = r.number("check_interval", 0.1, 3600)) tc.check_interval = *v;
    if (auto v = r.number("max_hold", 0, 7 * 86400)) tc.max_hold = *v;
    for (const char* k : {"max_threads_running", "critical_threads_running", "query", "check_interval", "max_hold"}) {
      if (r.get(k)) in_file.insert(k);
    }
    r.refuse_unknown();
  }
  auto origin = [&](const char* key) { return in_file.count(key) ? Origin::file : Origin::default_value; };
  set("throttle.max_threads_running", std::to_string(tc.max_threads_running), origin("max_threads_running"));
  set("throttle.critical_threads_running", std::to_string(tc.critical_threads_running),
      origin("critical_threads_running"));
  set("throttle.query", tc.query, origin("query"));
  set("throttle.check_interval", fmt::format("{}", tc.check_interval), origin("check_interval"));
  set("throttle.max_hold", fmt::format("{}", tc.max_hold), origin("max_hold"));
  auto flag_range = [](const char* flag, long long v) {
    if (v < 0 || v > 1000000) {
      throw ConfigError(fmt::format("{} {} is out of range; use 0 (off) to 1000000", flag, v));
    }
    return v;
  };
  if (o.max_threads_running) {
    tc.max_threads_running = flag_range("--max-threads-running", *o.max_threads_running);
    set("throttle.max_threads_running", std::to_string(tc.max_threads_running), Origin::flag);
  }
  if (o.critical_threads_running) {
    tc.critical_threads_running = flag_range("--critical-threads-running", *o.critical_threads_running);
    set("throttle.critical_threads_running", std::to_string(tc.critical_threads_running), Origin::flag);
  }
  if (o.throttle_query) set("throttle.query", tc.query = trim(*o.throttle_query), Origin::flag);
  tc.query = checked_throttle_query(tc.query, o.throttle_query ? "--throttle-query" : path + ": throttle.query");
  m_cfg.settings["throttle.query"].value = tc.query;  // as it is sent: without a trailing ';
  if (tc.max_threads_running > 0 && tc.critical_threads_running > 0 &&
      tc.critical_threads_running <= tc.max_threads_running) {
    std::string critical = o.critical_threads_running ? "--critical-threads-running"
                                                      : path + ": throttle.critical_threads_running";
    std::string max = o.max_threads_running ? "--max-threads-running" : "max_threads_running";
    throw ConfigError(fmt::format("{} = {} must be greater than {} = {}: the run holds at max_threads_running and "
                                  "stops at critical_threads_running; raise the critical value or set it to 0 (off)",
                                  critical, tc.critical_threads_running, max, tc.max_threads_running));
  }
}

// The throttle query runs on the source at every check: one read-only SELECT, nothing else.
// Returns the query without a trailing ';'.
std::string Loader::checked_throttle_query(const std::string& q, const std::string& where) {
  if (q.empty()) return q;
  for (unsigned char c : q) {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      throw ConfigError(fmt::format("{} contains a control character (byte 0x{:02x}); remove it", where, c));
    }
  }
  std::string head = ascii_lower(q.substr(0, 7));
  bool select = head.rfind("select", 0) == 0 && (q.size() == 6 || !std::isalnum(static_cast<unsigned char>(q[6])));
  if (!select) {
    throw ConfigError(fmt::format("{} must be one SELECT statement (like gh-ost's throttle query), e.g. \"SELECT "
                                  "COUNT(*) > 100 FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Sleep'\"; "
                                  "got: {}",
                                  where, q.substr(0, 60)));
  }
  std::string body = q;
  while (!body.empty() && (body.back() == ';' || std::isspace(static_cast<unsigned char>(body.back())))) {
    body.pop_back();
  }
  if (body.find(';') != std::string::npos) {
    throw ConfigError(fmt::format("{} must be a single statement: remove the ';' inside it", where));
  }
  return body;
}

}  // namespace goarchive::config::detail

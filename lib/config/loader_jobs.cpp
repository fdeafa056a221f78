// The [processing] defaults and the [jobs.<name>] blocks of a config, with their relations, environment and flags.
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

VerifyMethod Loader::parse_method(const std::string& v, const std::string& where) {
  if (v == "sha256") return VerifyMethod::sha256;
  if (v == "count") return VerifyMethod::count;
  if (v == "none") return VerifyMethod::none;
  throw ConfigError(fmt::format("{}: verification method \"{}\" is unknown; use sha256, count or none", where, v));
}

// Reads the processing keys that both [processing] and a job block may set.
void Loader::read_processing(Reader& r, Processing& p, const std::string& prefix, Origin origin) {
  auto mark = [&](const char* key, const std::string& value) { set(prefix + key, value, origin); };
  if (auto v = r.integer("batch_size", 1, 100000)) mark("batch_size", std::to_string(p.batch_size = *v));
  if (auto v = r.integer("delete_batch_size", 1, 100000))
    mark("delete_batch_size", std::to_string(p.delete_batch_size = *v));
  if (auto v = r.number("sleep", 0, 3600)) mark("sleep", fmt::format("{}", p.sleep = *v));
  if (auto v = r.number("lock_time", 0, 60)) mark("lock_time", fmt::format("{}", p.lock_time = *v));
  if (auto v = r.string("sentinel_file")) mark("sentinel_file", p.sentinel_file = *v);
  if (auto v = r.number("progress_interval", 1, 86400))
    mark("progress_interval", fmt::format("{}", p.progress_interval = *v));
  if (auto v = r.number("log_retention_days", 0, 3650))
    mark("log_retention_days", fmt::format("{}", p.log_retention_days = *v));
  if (auto v = r.boolean("analyze")) mark("analyze", (p.analyze = *v) ? "true" : "false");
}

void Loader::record_processing(const Processing& p, const std::string& prefix, Origin origin) {
  auto put = [&](const char* key, const std::string& value) {
    if (!m_cfg.settings.count(prefix + key)) set(prefix + key, value, origin);
  };
  put("batch_size", std::to_string(p.batch_size));
  put("delete_batch_size", std::to_string(p.delete_batch_size));
  put("sleep", fmt::format("{}", p.sleep));
  put("lock_time", fmt::format("{}", p.lock_time));
  put("sentinel_file", p.sentinel_file);
  put("progress_interval", fmt::format("{}", p.progress_interval));
  put("log_retention_days", fmt::format("{}", p.log_retention_days));
  put("verification", to_string(p.verification));
  put("analyze", p.analyze ? "true" : "false");
}

void Loader::apply_processing_env(Processing& p, const std::string& prefix) {
  auto env = [&](const char* name) -> const std::string* {
    auto it = m_env.find(name);
    return it == m_env.end() ? nullptr : &it->second;
  };
  if (auto* v = env("GOARCHIVE_BATCH_SIZE")) {
    p.batch_size = parse_int_env("GOARCHIVE_BATCH_SIZE", *v, 1, 100000);
    set(prefix + "batch_size", *v, Origin::environment);
  }
  if (auto* v = env("GOARCHIVE_DELETE_BATCH_SIZE")) {
    p.delete_batch_size = parse_int_env("GOARCHIVE_DELETE_BATCH_SIZE", *v, 1, 100000);
    set(prefix + "delete_batch_size", *v, Origin::environment);
  }
  if (auto* v = env("GOARCHIVE_SLEEP")) {
    p.sleep = parse_double_env("GOARCHIVE_SLEEP", *v, 0, 3600);
    set(prefix + "sleep", *v, Origin::environment);
  }
  if (auto* v = env("GOARCHIVE_LOCK_TIME")) {
    p.lock_time = parse_double_env("GOARCHIVE_LOCK_TIME", *v, 0, 60);
    set(prefix + "lock_time", *v, Origin::environment);
  }
  if (auto* v = env("GOARCHIVE_SENTINEL_FILE")) set(prefix + "sentinel_file", p.sentinel_file = *v, Origin::environment);
  if (auto* v = env("GOARCHIVE_VERIFICATION")) {
    p.verification = parse_method(*v, "environment GOARCHIVE_VERIFICATION");
    set(prefix + "verification", *v, Origin::environment);
  }
}

void Loader::apply_processing_flags(Processing& p, const std::string& prefix, const Overrides& o) {
  if (o.batch_size) set(prefix + "batch_size", std::to_string(p.batch_size = *o.batch_size), Origin::flag);
  if (o.delete_batch_size)
    set(prefix + "delete_batch_size", std::to_string(p.delete_batch_size = *o.delete_batch_size), Origin::flag);
  if (o.sleep) set(prefix + "sleep", fmt::format("{}", p.sleep = *o.sleep), Origin::flag);
  if (o.lock_time) set(prefix + "lock_time", fmt::format("{}", p.lock_time = *o.lock_time), Origin::flag);
  if (o.sentinel_file) set(prefix + "sentinel_file", p.sentinel_file = *o.sentinel_file, Origin::flag);
  if (o.progress_interval) {
    if (!std::isfinite(*o.progress_interval) || *o.progress_interval < 1 || *o.progress_interval > 86400) {
      throw ConfigError(fmt::format("--progress-interval {} is out of range; use 1 to 86400 seconds",
                                    *o.progress_interval));
    }
    set(prefix + "progress_interval", fmt::format("{}", p.progress_interval = *o.progress_interval), Origin::flag);
  }
}

Relation Loader::read_relation(const toml::table& t, const std::string& prefix, const std::string& path) {
  Reader r(t, prefix, path);
  Relation rel;
  auto table = r.string("table");
  if (!table) throw ConfigError(fmt::format("{}:{}: {} needs table = \"<child table>\"", path, t.source().begin.line, prefix));
  rel.table = *table;
  check_identifier(rel.table, prefix + ".table");
  auto fk = r.string_list("foreign_key");
  if (!fk) {
    throw ConfigError(fmt::format("{}:{}: {} (table {}) needs foreign_key = \"<column>\" or a list of columns", path,
                                  t.source().begin.line, prefix, rel.table));
  }
  rel.foreign_key = *fk;
  if (auto v = r.string("parent")) rel.parent = *v;
  if (!rel.parent.empty()) check_identifier(rel.parent, prefix + ".parent");
  if (auto v = r.string_list("references")) rel.references = *v;
  for (const auto& c : rel.foreign_key) check_identifier(c, prefix + ".foreign_key");
  for (const auto& c : rel.references) check_identifier(c, prefix + ".references");
  if (!rel.references.empty() && rel.references.size() != rel.foreign_key.size()) {
    throw ConfigError(fmt::format("{}:{}: {} (table {}): foreign_key has {} column(s) but references has {}; list "
                                  "one parent column per foreign-key column",
                                  path, t.source().begin.line, prefix, rel.table, rel.foreign_key.size(),
                                  rel.references.size()));
  }
  r.refuse_unknown();
  return rel;
}

void Loader::read_job(const std::string& name, const toml::table& t, const std::string& path, const Overrides& o) {
  std::string prefix = "jobs." + name;
  check_job_name(name, fmt::format("{}:{}", path, t.source().begin.line));
  Reader r(t, prefix, path);
  Job job;
  job.name = name;
  job.processing = m_cfg.processing;
  auto root = r.string("root_table");
  if (!root) throw ConfigError(fmt::format("{}:{}: job \"{}\" needs root_table = \"<table>\"", path, t.source().begin.line, name));
  job.root_table = *root;
  check_identifier(job.root_table, prefix + ".root_table");
  auto where = r.string("where", true);
  if (!where) {
    throw ConfigError(fmt::format("{}:{}: job \"{}\" needs where = \"<condition>\" (write where = \"1=1\" to archive "
                                  "the whole table)",
                                  path, t.source().begin.line, name));
  }
  job.where = *where;
  check_where(job.where, prefix + ".where");
  if (auto v = r.string_list("primary_key")) {
    job.primary_key = *v;
    for (const auto& c : job.primary_key) check_identifier(c, prefix + ".primary_key");
  }
  if (auto v = r.string("mode")) {
    if (*v != "archive" && *v != "copy-only" && *v != "purge") {
      throw ConfigError(fmt::format("{}: {}.mode = \"{}\" is not a mode; use archive, copy-only or purge",
                                    r.where(*r.get("mode")), prefix, *v));
    }
    job.mode = *v;
  }
  set(prefix + ".mode", job.mode, r.get("mode") ? Origin::job_block : Origin::default_value);
  read_processing(r, job.processing, prefix + ".", Origin::job_block);
  if (auto v = r.string("verification")) {
    job.processing.verification = parse_method(*v, r.where(*r.get("verification")));
    set(prefix + ".verification", *v, Origin::job_block);
  }
  if (auto v = r.boolean("force_triggers")) job.force_triggers = *v;
  if (o.force_triggers) job.force_triggers = true;
  set(prefix + ".force_triggers", job.force_triggers ? "true" : "false",
      o.force_triggers ? Origin::flag : r.get("force_triggers") ? Origin::job_block : Origin::default_value);
  if (auto v = r.string("partitions")) {
    if (*v != "auto" && *v != "off") {
      throw ConfigError(fmt::format("{}: {}.partitions = \"{}\" is not a choice; use \"auto\" (whole partitions "
                                    "inside where leave as one) or \"off\" (every row by the row path)",
                                    r.where(*r.get("partitions")), prefix, *v));
    }
    job.partitions = *v;
  }
  if (o.partitions) job.partitions = *o.partitions;
  set(prefix + ".partitions", job.partitions,
      o.partitions ? Origin::flag : r.get("partitions") ? Origin::job_block : Origin::default_value);
  if (auto v = r.integer("ddl_lock_wait_timeout", 1, 60)) job.ddl_lock_wait_timeout = *v;
  set(prefix + ".ddl_lock_wait_timeout", std::to_string(job.ddl_lock_wait_timeout),
      r.get("ddl_lock_wait_timeout") ? Origin::job_block : Origin::default_value);
  if (const toml::node* rels = r.get("relations")) {
    const toml::array* arr = rels->as_array();
    if (!arr) r.type_error("relations", *rels, "an array of tables ([[jobs.<name>.relations]])");
    size_t i = 0;
    for (const auto& e : *arr) {
      std::string rp = fmt::format("{}.relations[{}]", prefix, i++);
      if (!e.is_table()) throw ConfigError(fmt::format("{}:{}: {} must be a table", path, e.source().begin.line, rp));
      job.relations.push_back(read_relation(*e.as_table(), rp, path));
    }
  }
  r.refuse_unknown();
  set(prefix + ".root_table", job.root_table, Origin::job_block);
  set(prefix + ".where", job.where, Origin::job_block);
  apply_processing_env(job.processing, prefix + ".");
  apply_processing_flags(job.processing, prefix + ".", o);
  // Keys the job did not set inherit the [processing] value and its origin.
  record_inherited(prefix + ".");
  m_cfg.jobs.emplace(name, std::move(job));
}

void Loader::record_inherited(const std::string& job_prefix) {
  static const char* keys[] = {"batch_size", "delete_batch_size", "sleep", "lock_time", "sentinel_file", "progress_interval",
                               "log_retention_days", "verification", "analyze"};
  for (const char* k : keys) {
    if (m_cfg.settings.count(job_prefix + k)) continue;
    auto it = m_cfg.settings.find(std::string("processing.") + k);
    if (it != m_cfg.settings.end()) m_cfg.settings[job_prefix + k] = it->second;
  }
}

}  // namespace goarchive::config::detail

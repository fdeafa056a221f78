// validate: the config, then every preflight check of every job (or one) against the servers; writes nothing.
#include <algorithm>
#include <array>
#include <map>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/json.h"
#include "app/preflight.h"
#include "app/session.h"
#include "app/server_report.h"
#include "pipeline/engine.h"
#include "plan/sql.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::app {

namespace {

// `validate -v`: key, value, origin in columns as wide as their widest cell, so that every row lines up.
std::string settings_table(const config::Config& cfg) {
  std::vector<std::array<std::string, 3>> rows;
  // A multi-line value (a where condition) would break the columns: its line breaks are shown escaped.
  auto shown = [](const std::string& v) {
    if (v.empty()) return std::string("\"\"");
    std::string out;
    for (char c : v) out += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
    return out;
  };
  for (const auto& [k, s] : cfg.settings) rows.push_back({k, shown(s.value), to_string(s.origin)});
  for (const auto* srv : {static_cast<const config::ServerConfig*>(&cfg.source),
                          static_cast<const config::ServerConfig*>(&cfg.destination)}) {
    rows.push_back({srv->role + ".password", srv->password.empty() ? "(none)" : "<redacted>",
                    srv->password_origin.empty() ? "default" : srv->password_origin});
  }
  size_t key_width = 0, value_width = 0;
  for (const auto& r : rows) {
    key_width = std::max(key_width, r[0].size());
    value_width = std::max(value_width, r[1].size());
  }
  std::string out = "effective settings (origin):\n";
  for (const auto& r : rows) {
    out += fmt::format("  {:<{}} {:<{}} ({})\n", r[0], key_width, r[1], value_width, r[2]);
  }
  return out;
}

using Failures = std::map<std::string, std::vector<std::string>>;

// The failures listed under `key` (none when it has no entry).
const std::vector<std::string>& failures_of(const Failures& failures, const std::string& key) {
  static const std::vector<std::string> none;
  auto it = failures.find(key);
  return it == failures.end() ? none : it->second;
}

std::vector<std::string> job_names(const config::Config& cfg, const std::optional<std::string>& only) {
  std::vector<std::string> names;
  if (only) names.push_back(cfg.job(*only).name);
  else for (const auto& [n, j] : cfg.jobs) names.push_back(n);
  return names;
}

// A read-only session, or none when the server cannot be reached: that is a finding of validate, listed under
// "(servers)". A configuration error (exit 2) stays one.
std::unique_ptr<db::Connection> connect_read_only(const config::ServerConfig& server, const std::string& label,
                                                  Failures& failures) {
  std::unique_ptr<db::Connection> c;
  try {
    c = connect(server, label);
    c->execute("SET SESSION TRANSACTION READ ONLY");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    failures["(servers)"].push_back(e.what());
  }
  return c;
}

// A job is checked only when both servers answered: preflight needs the source, and the destination for its
// half of the checks. An unchecked job is never reported "ok". Empty when both answered.
std::string unchecked_reason(bool have_src, bool have_dst) {
  if (!have_src && !have_dst) return "neither server could be reached";
  if (!have_src) return "the source could not be reached";
  if (!have_dst) return "the destination could not be reached";
  return "";
}

// Every preflight check of each job whose source answered; each failure listed under its job's name, and each
// note (what a run would warn about) in `notes`. Returns how many of the failures only the config file can fix.
size_t check_jobs(const config::Config& cfg, const std::vector<std::string>& names, db::Connection* src,
                  db::Connection* dst, Failures& failures, Failures& notes) {
  size_t config_failures = 0;
  for (const auto& name : names) {
    const config::Job& job = cfg.jobs.at(name);
    plan::Tree tree(job);  // a configuration error: exit 2, like every other command
    try {
      if (src) {
        auto pf = preflight(cfg, job, tree, pipeline::Mode::archive, *src, dst, Purpose::validate);
        for (auto& f : pf.failures) failures[name].push_back(f);
        for (auto& n : pf.notes) notes[name].push_back(n);
        config_failures += pf.config_failures;
        if (pf.failures.empty()) {
          // The partition path's choices for the job's mode (its `mode` key), one note per partition.
          const pipeline::Mode mode = job.mode == "purge"       ? pipeline::Mode::purge
                                      : job.mode == "copy-only" ? pipeline::Mode::copy_only
                                                                : pipeline::Mode::archive;
          auto tables = pipeline::describe(tree, pf.source_tables, job, cfg.source.database, cfg.destination.database);
          tracking::Registry registry(cfg.destination.job_schema);
          pipeline::Engine engine(mode, job, tables, *src, dst ? *dst : *src, registry, 0, 0, "", {});
          for (const auto& c : engine.partition_plan()) notes[name].push_back(pipeline::describe(c));
        }
      }
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      failures[name].push_back(e.what());
    }
  }
  return config_failures;
}

void print_json(const std::vector<std::string>& names, const Failures& failures, const Failures& notes,
                const std::string& unchecked_why, size_t total) {
  Json out = Json::object();
  out.set("schema_version", Json(1));
  out.set("ok", Json(total == 0));
  Json jobs = Json::array();
  for (const auto& name : names) {
    Json o = Json::object();
    o.set("job", Json(name));
    o.set("checked", Json(unchecked_why.empty()));
    o.set("ok", Json(unchecked_why.empty() && failures_of(failures, name).empty()));
    Json f = Json::array();
    for (const auto& x : failures_of(failures, name)) f.push(Json(x));
    o.set("failures", f);
    Json w = Json::array();
    for (const auto& x : failures_of(notes, name)) w.push(Json(x));
    o.set("notes", w);
    jobs.push(o);
  }
  out.set("jobs", jobs);
  Json srv = Json::array();
  for (const auto& x : failures_of(failures, "(servers)")) srv.push(Json(x));
  out.set("server_failures", srv);
  std::cout << out.dump() << "\n";
}

// One line a job on stdout, then a line per note; the failures themselves go to stderr with the error.
void print_text(const std::vector<std::string>& names, const Failures& failures, const Failures& notes,
                const std::string& unchecked_why, bool have_src) {
  for (const auto& name : names) {
    size_t n = failures_of(failures, name).size();
    if (!unchecked_why.empty()) {
      std::string partial = have_src && n > 0 ? fmt::format("; the source checks found {} problem{}", n,
                                                            n == 1 ? "" : "s")
                                              : "";
      std::cout << fmt::format("job {}: NOT CHECKED ({}{})\n", name, unchecked_why, partial);
    } else if (n == 0) {
      std::cout << fmt::format("job {}: ok (config and every preflight check)\n", name);
    } else {
      std::cout << fmt::format("job {}: {} problem{} (listed on stderr)\n", name, n, n == 1 ? "" : "s");
    }
    for (const auto& note : failures_of(notes, name)) std::cout << fmt::format("job {}: note: {}\n", name, note);
  }
}

std::string problems_message(const Failures& failures, size_t total) {
  std::string msg = fmt::format("validate found {} problem{}:", total, total == 1 ? "" : "s");
  for (const auto& [k, v] : failures) {
    for (const auto& f : v) msg += fmt::format("\n  [{}] {}", k, f);
  }
  return msg;
}

}  // namespace

int validate(const config::Config& cfg, const std::optional<std::string>& only, int verbosity, Format format) {
  std::vector<std::string> names = job_names(cfg, only);
  if (verbosity > 0 && format == Format::text) std::cout << settings_table(cfg);
  Failures failures, notes;
  auto src = connect_read_only(cfg.source, "source (validate)", failures);
  auto dst = connect_read_only(cfg.destination, "destination (validate)", failures);
  if (verbosity > 0 && format == Format::text) std::cout << server_report(src.get(), dst.get());
  std::string unchecked_why = unchecked_reason(src != nullptr, dst != nullptr);
  size_t config_failures = check_jobs(cfg, names, src.get(), dst.get(), failures, notes);
  size_t total = 0;
  for (const auto& [k, v] : failures) total += v.size();
  if (format == Format::json) print_json(names, failures, notes, unchecked_why, total);
  else print_text(names, failures, notes, unchecked_why, src != nullptr);
  if (total == 0) return 0;
  // Every problem a configuration error (a mistyped table or column): exit 2, as from every other command.
  const bool config_only = config_failures == total;
  if (format == Format::json) return config_only ? k_exit_usage : k_exit_failed;
  if (config_only) throw ConfigError(problems_message(failures, total));
  throw PreflightError(problems_message(failures, total));
}

}  // namespace goarchive::app

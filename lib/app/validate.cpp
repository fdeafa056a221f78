// validate: the config, then every preflight check of every job (or one) against the servers; writes nothing.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/json.h"
#include "app/preflight.h"
#include "app/session.h"
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
  for (const auto* srv : {&cfg.source, static_cast<const config::ServerConfig*>(&cfg.destination)}) {
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

}  // namespace

int validate(const config::Config& cfg, const std::optional<std::string>& only, int verbosity, Format format) {
  std::vector<std::string> names;
  if (only) names.push_back(cfg.job(*only).name);
  else for (const auto& [n, j] : cfg.jobs) names.push_back(n);
  if (verbosity > 0 && format == Format::text) std::cout << settings_table(cfg);
  std::map<std::string, std::vector<std::string>> failures;
  std::unique_ptr<db::Connection> src, dst;
  // A configuration error (exit 2) stays one; a server that cannot be reached is a finding of validate.
  try {
    src = connect(cfg.source, "source (validate)");
    src->execute("SET SESSION TRANSACTION READ ONLY");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    failures["(servers)"].push_back(e.what());
  }
  try {
    dst = connect(cfg.destination, "destination (validate)");
    dst->execute("SET SESSION TRANSACTION READ ONLY");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    failures["(servers)"].push_back(e.what());
  }
  // A job is checked only when both servers answered: preflight needs the source, and the destination for its
  // half of the checks. An unchecked job is never reported "ok".
  std::string unchecked_why;
  if (!src && !dst) unchecked_why = "neither server could be reached";
  else if (!src) unchecked_why = "the source could not be reached";
  else if (!dst) unchecked_why = "the destination could not be reached";
  for (const auto& name : names) {
    const config::Job& job = cfg.jobs.at(name);
    plan::Tree tree(job);  // a configuration error: exit 2, like every other command
    try {
      if (src) {
        auto pf = preflight(cfg, job, tree, pipeline::Mode::archive, *src, dst.get());
        for (auto& f : pf.failures) failures[name].push_back(f);
      }
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      failures[name].push_back(e.what());
    }
  }
  size_t total = 0;
  for (const auto& [k, v] : failures) total += v.size();
  if (format == Format::json) {
    Json out = Json::object();
    out.set("schema_version", Json(1));
    out.set("ok", Json(total == 0));
    Json jobs = Json::array();
    for (const auto& name : names) {
      Json o = Json::object();
      o.set("job", Json(name));
      o.set("checked", Json(unchecked_why.empty()));
      o.set("ok", Json(unchecked_why.empty() && failures[name].empty()));
      Json f = Json::array();
      for (const auto& x : failures[name]) f.push(Json(x));
      o.set("failures", f);
      jobs.push(o);
    }
    out.set("jobs", jobs);
    Json srv = Json::array();
    for (const auto& x : failures["(servers)"]) srv.push(Json(x));
    out.set("server_failures", srv);
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& name : names) {
      size_t n = failures[name].size();
      if (!unchecked_why.empty()) {
        std::string partial = src && n > 0 ? fmt::format("; the source checks found {} problem{}", n, n == 1 ? "" : "s")
                                           : "";
        std::cout << fmt::format("job {}: NOT CHECKED ({}{})\n", name, unchecked_why, partial);
      } else if (n == 0) {
        std::cout << fmt::format("job {}: ok (config and every preflight check)\n", name);
      } else {
        std::cout << fmt::format("job {}: {} problem{} (listed on stderr)\n", name, n, n == 1 ? "" : "s");
      }
    }
  }
  if (total == 0) return 0;
  std::string msg = fmt::format("validate found {} problem{}:", total, total == 1 ? "" : "s");
  for (const auto& [k, v] : failures) {
    for (const auto& f : v) msg += fmt::format("\n  [{}] {}", k, f);
  }
  if (format == Format::json) return k_exit_failed;
  throw PreflightError(msg);
}

}  // namespace goarchive::app

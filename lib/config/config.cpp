#include "config/config.h"

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

extern char** environ;

namespace goarchive::config {

const char* to_string(TlsMode mode) {
  switch (mode) {
    case TlsMode::disabled: return "disabled";
    case TlsMode::preferred: return "preferred";
    case TlsMode::required: return "required";
    case TlsMode::verify_ca: return "verify-ca";
    case TlsMode::verify_identity: return "verify-identity";
  }
  return "?";
}

const char* to_string(VerifyMethod method) {
  switch (method) {
    case VerifyMethod::sha256: return "sha256";
    case VerifyMethod::count: return "count";
    case VerifyMethod::none: return "none";
  }
  return "?";
}

const char* to_string(Origin origin) {
  switch (origin) {
    case Origin::default_value: return "default";
    case Origin::file: return "file";
    case Origin::job_block: return "job block";
    case Origin::environment: return "environment";
    case Origin::flag: return "flag";
  }
  return "?";
}

std::string ServerConfig::display() const {
  if (!socket.empty()) return fmt::format("{}@{}", user, socket);
  return fmt::format("{}@{}:{}", user, host, port);
}

const Job& Config::job(const std::string& name) const {
  auto it = jobs.find(name);
  if (it != jobs.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, j] : jobs) names.push_back(n);
  if (names.empty()) {
    throw ConfigError(fmt::format("job \"{}\" is not defined in {}: the file has no [jobs.<name>] block", name, path));
  }
  throw ConfigError(fmt::format("job \"{}\" is not defined in {}; its jobs are: {}", name, path, join(names, ", ")));
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}


Config load_string(const std::string& text, const std::string& path, const std::map<std::string, std::string>& env,
                   const Overrides& overrides) {
  if (text.find('\0') != std::string::npos) {
    throw ConfigError(fmt::format("{}: the file contains a NUL byte; it is not a TOML text file", path));
  }
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}: TOML syntax error: {}", path, e.source().begin.line, e.description()));
  }
  Config cfg;
  cfg.path = path;
  detail::Loader loader(cfg, env);
  loader.load(doc, path, overrides);
  return cfg;
}

Config load_file(const std::string& path, const std::map<std::string, std::string>& env, const Overrides& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("cannot read config file {}: it does not exist or is not readable; pass the right "
                                  "path with -c/--config",
                                  path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_string(ss.str(), path, env, overrides);
}

}  // namespace goarchive::config

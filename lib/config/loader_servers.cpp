// The [source] and [destination] sections of a config: server keys, password sources and their environment
// variables.
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

void Loader::read_server(Reader& r, ServerConfig& s, const std::string& section, bool is_destination) {
  s.role = section;
  read_address(r, s, section);
  read_tls(r, s, section);
  read_timeouts(r, s, section);
  read_password(r, s, section);
  if (is_destination) read_destination_keys(r, static_cast<DestinationConfig&>(s));
  r.refuse_unknown();
}

void Loader::read_source_keys(Reader& r, SourceConfig& s) {
  if (auto v = r.boolean("allow_replica")) s.allow_replica = *v;
  set("source.allow_replica", s.allow_replica ? "true" : "false",
      r.get("allow_replica") ? Origin::file : Origin::default_value);
}

void Loader::read_address(Reader& r, ServerConfig& s, const std::string& section) {
  set(section + ".host", s.host, Origin::default_value);
  set(section + ".port", std::to_string(s.port), Origin::default_value);
  if (auto v = r.string("host")) set(section + ".host", s.host = *v, Origin::file);
  if (auto v = r.integer("port", 1, 65535)) set(section + ".port", std::to_string(s.port = static_cast<int>(*v)), Origin::file);
  if (auto v = r.string("socket")) set(section + ".socket", s.socket = *v, Origin::file);
  if (auto v = r.string("user")) set(section + ".user", s.user = *v, Origin::file);
  if (auto v = r.string("database")) {
    check_identifier(*v, section + ".database");
    set(section + ".database", s.database = *v, Origin::file);
  }
  if (auto v = r.string("defaults_file")) {
    if (::access(v->c_str(), R_OK) != 0) {
      throw ConfigError(fmt::format("{}.defaults_file {} cannot be read: it does not exist or is not readable; fix "
                                    "the path",
                                    section, *v));
    }
    set(section + ".defaults_file", s.defaults_file = *v, Origin::file);
  }
}

void Loader::read_tls(Reader& r, ServerConfig& s, const std::string& section) {
  if (auto v = r.string("tls")) {
    static const std::map<std::string, TlsMode> modes = {{"disabled", TlsMode::disabled},
                                                         {"preferred", TlsMode::preferred},
                                                         {"required", TlsMode::required},
                                                         {"verify-ca", TlsMode::verify_ca},
                                                         {"verify-identity", TlsMode::verify_identity}};
    auto it = modes.find(*v);
    if (it == modes.end()) {
      throw ConfigError(fmt::format("{}: {}.tls = \"{}\" is not a TLS mode; use disabled, preferred, required, "
                                    "verify-ca or verify-identity",
                                    r.where(*r.get("tls")), section, *v));
    }
    s.tls = it->second;
  }
  set(section + ".tls", to_string(s.tls), r.get("tls") ? Origin::file : Origin::default_value);
  if (auto v = r.string("tls_ca")) set(section + ".tls_ca", s.tls_ca = *v, Origin::file);
  if (auto v = r.string("tls_cert")) set(section + ".tls_cert", s.tls_cert = *v, Origin::file);
  if (auto v = r.string("tls_key")) set(section + ".tls_key", s.tls_key = *v, Origin::file);
  if (auto v = r.string("server_public_key")) {
    if (::access(v->c_str(), R_OK) != 0) {
      throw ConfigError(fmt::format("{}: {}.server_public_key = \"{}\" cannot be read ({}); give the path of the "
                                    "server's RSA public key file (MySQL: the file caching_sha2_password_public_key_"
                                    "path names, or SHOW STATUS LIKE 'Caching_sha2_password_rsa_public_key'), or "
                                    "remove the key",
                                    r.where(*r.get("server_public_key")), section, *v, std::strerror(errno)));
    }
    set(section + ".server_public_key", s.server_public_key = *v, Origin::file);
  }
  if ((s.tls == TlsMode::verify_ca || s.tls == TlsMode::verify_identity) && s.tls_ca.empty()) {
    throw ConfigError(fmt::format("{}: {}.tls = \"{}\" needs tls_ca, the CA file that signed the server's certificate",
                                  r.path(), section, to_string(s.tls)));
  }
}

void Loader::read_timeouts(Reader& r, ServerConfig& s, const std::string& section) {
  if (auto v = r.number("connect_timeout", 0.1, 3600)) s.connect_timeout = *v;
  if (auto v = r.number("read_timeout", 1, 86400)) s.read_timeout = *v;
  if (auto v = r.number("write_timeout", 1, 86400)) s.write_timeout = *v;
  for (const auto& [key, value] : {std::pair<const char*, double>{"connect_timeout", s.connect_timeout},
                                    {"read_timeout", s.read_timeout},
                                    {"write_timeout", s.write_timeout}}) {
    set(section + "." + key, fmt::format("{}", value), r.get(key) ? Origin::file : Origin::default_value);
  }
}

void Loader::read_password(Reader& r, ServerConfig& s, const std::string& section) {
  auto password = r.string("password");
  auto password_env = r.string("password_env");
  auto password_file = r.string("password_file");
  int sources = (password ? 1 : 0) + (password_env ? 1 : 0) + (password_file ? 1 : 0);
  if (sources > 1) {
    throw ConfigError(fmt::format("{}: [{}] sets more than one of password, password_env and password_file; keep one",
                                  r.path(), section));
  }
  if (password) {
    s.password = Secret(*password);
    s.password_origin = "password";
  } else if (password_env) {
    auto it = m_env.find(*password_env);
    // Resolved now, reported only when a connection needs it: `plan` works without the secret.
    if (it == m_env.end()) {
      s.password_error = fmt::format("{}: {}.password_env names the environment variable {}, which is not set; "
                                     "export it before running goarchive",
                                     r.path(), section, *password_env);
    } else {
      s.password = Secret(it->second);
    }
    s.password_origin = "password_env " + *password_env;
  } else if (password_file) {
    s.password = Secret(read_password_file(*password_file, section));
    s.password_origin = "password_file " + *password_file;
  }
}

void Loader::read_destination_keys(Reader& r, DestinationConfig& d) {
  if (auto v = r.string("job_schema")) set("destination.job_schema", d.job_schema = *v, Origin::file);
  else set("destination.job_schema", d.job_schema, Origin::default_value);
  if (auto v = r.boolean("foreign_key_checks")) d.foreign_key_checks = *v;
  set("destination.foreign_key_checks", d.foreign_key_checks ? "true" : "false",
      r.get("foreign_key_checks") ? Origin::file : Origin::default_value);
}

std::string Loader::read_password_file(const std::string& file, const std::string& section) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    throw ConfigError(fmt::format("{}.password_file {} cannot be read: it does not exist or is not accessible",
                                  section, file));
  }
  if (!S_ISREG(st.st_mode)) {
    throw ConfigError(fmt::format("{}.password_file {} is not a regular file; point it at the file that holds the "
                                  "password",
                                  section, file));
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    throw ConfigError(fmt::format("{}.password_file {} is readable by group or others; run: chmod 600 {}", section,
                                  file, file));
  }
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("{}.password_file {} cannot be opened", section, file));
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

void Loader::apply_server_env(ServerConfig& s, const std::string& section, const std::string& prefix) {
  auto take = [&](const char* key, auto&& apply) {
    auto it = m_env.find(prefix + key);
    if (it != m_env.end()) apply(it->second);
  };
  take("HOST", [&](const std::string& v) { set(section + ".host", s.host = v, Origin::environment); });
  take("PORT", [&](const std::string& v) {
    s.port = static_cast<int>(parse_int_env(prefix + "PORT", v, 1, 65535));
    set(section + ".port", v, Origin::environment);
  });
  take("SOCKET", [&](const std::string& v) { set(section + ".socket", s.socket = v, Origin::environment); });
  take("USER", [&](const std::string& v) { set(section + ".user", s.user = v, Origin::environment); });
  take("DATABASE", [&](const std::string& v) {
    check_identifier(v, prefix + "DATABASE");
    set(section + ".database", s.database = v, Origin::environment);
  });
  take("PASSWORD", [&](const std::string& v) {
    s.password = Secret(v);
    s.password_error.clear();
    s.password_origin = "environment " + prefix + "PASSWORD";
  });
}

long long Loader::parse_int_env(const std::string& name, const std::string& v, long long min, long long max) {
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= min && n <= max) return n;
  } catch (const std::exception&) {
  }
  throw ConfigError(fmt::format("environment {}=\"{}\" must be a whole number from {} to {}", name, v, min, max));
}

double Loader::parse_double_env(const std::string& name, const std::string& v, double min, double max) {
  try {
    size_t used = 0;
    double n = std::stod(v, &used);
    if (used == v.size() && std::isfinite(n) && n >= min && n <= max) return n;
  } catch (const std::exception&) {
  }
  throw ConfigError(fmt::format("environment {}=\"{}\" must be a number from {} to {}", name, v, min, max));
}

}  // namespace goarchive::config::detail

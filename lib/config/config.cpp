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

namespace {

// Reads one table of the document, remembering which keys were used so the rest can be refused.
class Reader {
public:
  Reader(const toml::table& table, std::string prefix, std::string path)
      : m_table(table), m_prefix(std::move(prefix)), m_path(std::move(path)) {}

  std::string where(const toml::node& node) const {
    return fmt::format("{}:{}", m_path, node.source().begin.line);
  }
  std::string key_name(std::string_view key) const { return m_prefix.empty() ? std::string(key) : m_prefix + "." + std::string(key); }

  const toml::node* get(std::string_view key) {
    m_used.insert(std::string(key));
    return m_table.get(key);
  }

  [[noreturn]] void type_error(std::string_view key, const toml::node& node, std::string_view expected) const {
    throw ConfigError(fmt::format("{}: {} must be {}", where(node), key_name(key), expected));
  }

  // A string value. NUL is refused everywhere (C APIs would cut the value there); other control characters are
  // refused too, except tab, and line breaks where `multiline` allows them (the `where` condition).
  std::optional<std::string> string(std::string_view key, bool multiline = false) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) type_error(key, *n, "a string (in quotes)");
    const std::string& v = n->as_string()->get();
    for (unsigned char c : v) {
      bool allowed = c == '\t' || (multiline && (c == '\n' || c == '\r'));
      if ((c < 0x20 || c == 0x7f) && !allowed) {
        throw ConfigError(fmt::format("{}: {} contains a control character (byte 0x{:02x}); remove it", where(*n),
                                      key_name(key), c));
      }
    }
    return v;
  }

  std::optional<long long> integer(std::string_view key, long long min, long long max) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) type_error(key, *n, "a whole number");
    long long v = n->as_integer()->get();
    if (v < min || v > max) {
      throw ConfigError(fmt::format("{}: {} = {} is out of range; use a value from {} to {}", where(*n),
                                    key_name(key), v, min, max));
    }
    return v;
  }

  std::optional<double> number(std::string_view key, double min, double max) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else type_error(key, *n, "a number");
    if (!std::isfinite(v) || v < min || v > max) {
      throw ConfigError(fmt::format("{}: {} = {} is out of range; use a value from {} to {}", where(*n),
                                    key_name(key), v, min, max));
    }
    return v;
  }

  std::optional<bool> boolean(std::string_view key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) type_error(key, *n, "true or false");
    return n->as_boolean()->get();
  }

  // A string or an array of strings (column lists).
  std::optional<std::vector<std::string>> string_list(std::string_view key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    std::vector<std::string> out;
    if (n->is_string()) {
      out.push_back(n->as_string()->get());
      check_identifier(out.back(), key_name(key));
    } else if (const toml::array* arr = n->as_array()) {
      for (const auto& e : *arr) {
        if (!e.is_string()) type_error(key, e, "a column name or a list of column names");
        out.push_back(e.as_string()->get());
        check_identifier(out.back(), key_name(key));
      }
      if (out.empty()) type_error(key, *n, "a column name or a non-empty list of column names");
    } else {
      type_error(key, *n, "a column name or a list of column names");
    }
    return out;
  }

  const toml::table* subtable(std::string_view key) {
    const toml::node* n = get(key);
    if (!n) return nullptr;
    if (!n->is_table()) type_error(key, *n, "a table ([section])");
    return n->as_table();
  }

  // Refuses every key that was not read.
  void refuse_unknown() const {
    for (const auto& [k, v] : m_table) {
      if (!m_used.count(std::string(k.str()))) {
        throw ConfigError(fmt::format("{}: unknown key {}; check its spelling against goarchive.toml(5)", where(v),
                                      key_name(k.str())));
      }
    }
  }

  const std::string& path() const { return m_path; }

private:
  const toml::table& m_table;
  std::string m_prefix;
  std::string m_path;
  std::set<std::string> m_used;
};

class Loader {
public:
  Loader(Config& cfg, const std::map<std::string, std::string>& env) : m_cfg(cfg), m_env(env) {}

  void set(const std::string& key, std::string value, Origin origin) {
    m_cfg.settings[key] = Setting{std::move(value), origin};
  }

  void read_server(Reader& r, ServerConfig& s, const std::string& section, bool is_destination) {
    s.role = section;
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
    if ((s.tls == TlsMode::verify_ca || s.tls == TlsMode::verify_identity) && s.tls_ca.empty()) {
      throw ConfigError(fmt::format("{}: {}.tls = \"{}\" needs tls_ca, the CA file that signed the server's certificate",
                                    r.path(), section, to_string(s.tls)));
    }
    if (auto v = r.number("connect_timeout", 0.1, 3600)) s.connect_timeout = *v;
    if (auto v = r.number("read_timeout", 1, 86400)) s.read_timeout = *v;
    if (auto v = r.number("write_timeout", 1, 86400)) s.write_timeout = *v;
    set(section + ".connect_timeout", fmt::format("{}", s.connect_timeout),
        r.get("connect_timeout") ? Origin::file : Origin::default_value);

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
    if (is_destination) {
      auto& d = static_cast<DestinationConfig&>(s);
      if (auto v = r.string("job_schema")) set("destination.job_schema", d.job_schema = *v, Origin::file);
      else set("destination.job_schema", d.job_schema, Origin::default_value);
      if (auto v = r.boolean("foreign_key_checks")) d.foreign_key_checks = *v;
      set("destination.foreign_key_checks", d.foreign_key_checks ? "true" : "false",
          r.get("foreign_key_checks") ? Origin::file : Origin::default_value);
    }
    r.refuse_unknown();
  }

  std::string read_password_file(const std::string& file, const std::string& section) {
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

  void apply_server_env(ServerConfig& s, const std::string& section, const std::string& prefix) {
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

  long long parse_int_env(const std::string& name, const std::string& v, long long min, long long max) {
    try {
      size_t used = 0;
      long long n = std::stoll(v, &used);
      if (used == v.size() && n >= min && n <= max) return n;
    } catch (const std::exception&) {
    }
    throw ConfigError(fmt::format("environment {}=\"{}\" must be a whole number from {} to {}", name, v, min, max));
  }

  double parse_double_env(const std::string& name, const std::string& v, double min, double max) {
    try {
      size_t used = 0;
      double n = std::stod(v, &used);
      if (used == v.size() && std::isfinite(n) && n >= min && n <= max) return n;
    } catch (const std::exception&) {
    }
    throw ConfigError(fmt::format("environment {}=\"{}\" must be a number from {} to {}", name, v, min, max));
  }

  static VerifyMethod parse_method(const std::string& v, const std::string& where) {
    if (v == "sha256") return VerifyMethod::sha256;
    if (v == "count") return VerifyMethod::count;
    if (v == "none") return VerifyMethod::none;
    throw ConfigError(fmt::format("{}: verification method \"{}\" is unknown; use sha256, count or none", where, v));
  }

  // Reads the processing keys that both [processing] and a job block may set.
  void read_processing(Reader& r, Processing& p, const std::string& prefix, Origin origin) {
    auto mark = [&](const char* key, const std::string& value) { set(prefix + key, value, origin); };
    if (auto v = r.integer("batch_size", 1, 100000)) mark("batch_size", std::to_string(p.batch_size = *v));
    if (auto v = r.integer("delete_batch_size", 1, 100000))
      mark("delete_batch_size", std::to_string(p.delete_batch_size = *v));
    if (auto v = r.number("sleep", 0, 3600)) mark("sleep", fmt::format("{}", p.sleep = *v));
    if (auto v = r.string("sentinel_file")) mark("sentinel_file", p.sentinel_file = *v);
    if (auto v = r.number("progress_interval", 1, 86400))
      mark("progress_interval", fmt::format("{}", p.progress_interval = *v));
    if (auto v = r.number("log_retention_days", 0, 3650))
      mark("log_retention_days", fmt::format("{}", p.log_retention_days = *v));
    if (auto v = r.boolean("analyze")) mark("analyze", (p.analyze = *v) ? "true" : "false");
  }

  void record_processing(const Processing& p, const std::string& prefix, Origin origin) {
    auto put = [&](const char* key, const std::string& value) {
      if (!m_cfg.settings.count(prefix + key)) set(prefix + key, value, origin);
    };
    put("batch_size", std::to_string(p.batch_size));
    put("delete_batch_size", std::to_string(p.delete_batch_size));
    put("sleep", fmt::format("{}", p.sleep));
    put("sentinel_file", p.sentinel_file);
    put("progress_interval", fmt::format("{}", p.progress_interval));
    put("log_retention_days", fmt::format("{}", p.log_retention_days));
    put("verification", to_string(p.verification));
    put("analyze", p.analyze ? "true" : "false");
  }

  void apply_processing_env(Processing& p, const std::string& prefix) {
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
    if (auto* v = env("GOARCHIVE_SENTINEL_FILE")) set(prefix + "sentinel_file", p.sentinel_file = *v, Origin::environment);
    if (auto* v = env("GOARCHIVE_VERIFICATION")) {
      p.verification = parse_method(*v, "environment GOARCHIVE_VERIFICATION");
      set(prefix + "verification", *v, Origin::environment);
    }
  }

  void apply_processing_flags(Processing& p, const std::string& prefix, const Overrides& o) {
    if (o.batch_size) set(prefix + "batch_size", std::to_string(p.batch_size = *o.batch_size), Origin::flag);
    if (o.delete_batch_size)
      set(prefix + "delete_batch_size", std::to_string(p.delete_batch_size = *o.delete_batch_size), Origin::flag);
    if (o.sleep) set(prefix + "sleep", fmt::format("{}", p.sleep = *o.sleep), Origin::flag);
    if (o.sentinel_file) set(prefix + "sentinel_file", p.sentinel_file = *o.sentinel_file, Origin::flag);
    if (o.progress_interval) {
      if (!std::isfinite(*o.progress_interval) || *o.progress_interval < 1 || *o.progress_interval > 86400) {
        throw ConfigError(fmt::format("--progress-interval {} is out of range; use 1 to 86400 seconds",
                                      *o.progress_interval));
      }
      set(prefix + "progress_interval", fmt::format("{}", p.progress_interval = *o.progress_interval), Origin::flag);
    }
  }

  Relation read_relation(const toml::table& t, const std::string& prefix, const std::string& path) {
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

  void read_job(const std::string& name, const toml::table& t, const std::string& path, const Overrides& o) {
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
    read_processing(r, job.processing, prefix + ".", Origin::job_block);
    if (auto v = r.string("verification")) {
      job.processing.verification = parse_method(*v, r.where(*r.get("verification")));
      set(prefix + ".verification", *v, Origin::job_block);
    }
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

  void record_inherited(const std::string& job_prefix) {
    static const char* keys[] = {"batch_size", "delete_batch_size", "sleep", "sentinel_file", "progress_interval",
                                 "log_retention_days", "verification", "analyze"};
    for (const char* k : keys) {
      if (m_cfg.settings.count(job_prefix + k)) continue;
      auto it = m_cfg.settings.find(std::string("processing.") + k);
      if (it != m_cfg.settings.end()) m_cfg.settings[job_prefix + k] = it->second;
    }
  }

  void load(const toml::table& doc, const std::string& path, const Overrides& o) {
    Reader top(doc, "", path);
    if (const toml::table* t = top.subtable("source")) {
      Reader r(*t, "source", path);
      read_server(r, m_cfg.source, "source", false);
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
    if (const toml::table* t = top.subtable("replication")) read_replication(*t, path);
    read_throttle(top.subtable("throttle"), path, o);
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

    if (const toml::table* t = top.subtable("jobs")) {
      Reader jobs(*t, "jobs", path);
      for (const auto& [k, v] : *t) {
        std::string name(k.str());
        const toml::node* n = jobs.get(name);
        if (!n->is_table()) jobs.type_error(name, *n, "a table ([jobs." + name + "])");
        read_job(name, *n->as_table(), path, o);
      }
    }
    top.refuse_unknown();
  }

  void read_replication(const toml::table& t, const std::string& path) {
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

  // [throttle] (optional), then the flags over it, then the checks that need both.
  void read_throttle(const toml::table* t, const std::string& path, const Overrides& o) {
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
  static std::string checked_throttle_query(const std::string& q, const std::string& where) {
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

private:
  Config& m_cfg;
  const std::map<std::string, std::string>& m_env;
};

}  // namespace

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
  Loader loader(cfg, env);
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

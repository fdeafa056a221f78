#pragma once
// Internal to lib/config: the Reader of one TOML table (keys used, types, ranges, unknown keys refused) and the
// Loader that turns a document into a Config with every value's origin. Only config's own files include this.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "config/config.h"
#include "config/identifiers.h"
#include "util/error.h"

namespace goarchive::config::detail {

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
  void set(const std::string& key, std::string value, Origin origin);
  // [source] or [destination]: its keys in order (address, TLS, timeouts, password, the destination's own), then
  // unknown keys refused.
  void read_server(Reader& r, ServerConfig& s, const std::string& section, bool is_destination);
  // host, port, socket, user, database, defaults_file (which must be readable).
  void read_address(Reader& r, ServerConfig& s, const std::string& section);
  // tls (a known mode; verify-* needs tls_ca), tls_ca, tls_cert, tls_key.
  void read_tls(Reader& r, ServerConfig& s, const std::string& section);
  void read_timeouts(Reader& r, ServerConfig& s, const std::string& section);
  // At most one of password, password_env (a missing variable is reported when a connection needs it) and
  // password_file.
  void read_password(Reader& r, ServerConfig& s, const std::string& section);
  // job_schema and foreign_key_checks, which only [destination] has.
  void read_destination_keys(Reader& r, DestinationConfig& d);
  // allow_replica, which only [source] has.
  void read_source_keys(Reader& r, SourceConfig& s);
  std::string read_password_file(const std::string& file, const std::string& section);
  void apply_server_env(ServerConfig& s, const std::string& section, const std::string& prefix);
  long long parse_int_env(const std::string& name, const std::string& v, long long min, long long max);
  double parse_double_env(const std::string& name, const std::string& v, double min, double max);
  static VerifyMethod parse_method(const std::string& v, const std::string& where);
  // Reads the processing keys that both [processing] and a job block may set.
  void read_processing(Reader& r, Processing& p, const std::string& prefix, Origin origin);
  void record_processing(const Processing& p, const std::string& prefix, Origin origin);
  void apply_processing_env(Processing& p, const std::string& prefix);
  void apply_processing_flags(Processing& p, const std::string& prefix, const Overrides& o);
  Relation read_relation(const toml::table& t, const std::string& prefix, const std::string& path);
  void read_job(const std::string& name, const toml::table& t, const std::string& path, const Overrides& o);
  void record_inherited(const std::string& job_prefix);
  // The whole document, section by section, each value's origin recorded; unknown keys refused.
  void load(const toml::table& doc, const std::string& path, const Overrides& o);
  // [source] and [destination], then the GOARCHIVE_SOURCE_* / GOARCHIVE_DESTINATION_* / GOARCHIVE_JOB_SCHEMA
  // environment over them.
  void read_servers(Reader& top, const std::string& path);
  // [processing] and [verification], then the defaults of what neither set.
  void read_processing_sections(Reader& top, const std::string& path);
  // [logging], then the environment and the flags over it; unknown levels and formats refused.
  void read_logging(Reader& top, const std::string& path, const Overrides& o);
  // Every [jobs.NAME] table.
  void read_jobs(Reader& top, const std::string& path, const Overrides& o);
  void read_replication(const toml::table& t, const std::string& path);
  // [hooks] (optional), then the flags over it.
  void read_hooks(const toml::table* t, const std::string& path, const Overrides& o);
  // [control] (optional): the socket pattern, checked for every job it expands for (after read_jobs).
  void read_control(const toml::table* t, const std::string& path);
  // [throttle] (optional), then the flags over it, then the checks that need both.
  void read_throttle(const toml::table* t, const std::string& path, const Overrides& o);
  // The throttle query runs on the source at every check: one read-only SELECT, nothing else.
  // Returns the query without a trailing ';'.
  static std::string checked_throttle_query(const std::string& q, const std::string& where);

private:
  Config& m_cfg;
  const std::map<std::string, std::string>& m_env;
};

}  // namespace goarchive::config::detail

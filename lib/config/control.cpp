// [control]: the control socket's path pattern, its expansion for a job, and the checks that refuse a pattern
// before any run could create a socket from it. Creating and serving the socket is app/control_socket's.
#include <fmt/format.h>

#include "config/loader.h"
#include "util/error.h"

namespace goarchive::config {

namespace {

// A Unix socket's path fits in sockaddr_un::sun_path (108 bytes on Linux) with its NUL.
constexpr size_t k_max_socket_path = 107;

// Why `pattern` cannot be a socket path pattern, or "" when it can.
std::string pattern_problem(const std::string& pattern) {
  if (pattern.front() != '/') return "must be an absolute path (e.g. \"/run/goarchive/%j.sock\")";
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 < pattern.size() && (pattern[i + 1] == 'j' || pattern[i + 1] == '%')) {
      ++i;
      continue;
    }
    return fmt::format("has \"{}\" at byte {}; only %j (the job name) and %% (a '%') may follow a '%'",
                       pattern.substr(i, 2), i + 1);
  }
  return "";
}

// Why the expanded `path` cannot be created safely, or "" when it can: every component a name (no "", "." or
// "..", so that a job name never moves the socket to another directory), and short enough for sun_path.
std::string path_problem(const std::string& path) {
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return fmt::format("expands to \"{}\", which has an empty, \".\" or \"..\" component; name the directory and "
                         "the file plainly",
                         path);
    }
    start = end + 1;
  }
  if (path.size() > k_max_socket_path) {
    return fmt::format("expands to \"{}\" ({} bytes); a Unix socket path holds at most {}: use a shorter directory",
                       path, path.size(), k_max_socket_path);
  }
  return "";
}

}  // namespace

std::string control_socket_path(const std::string& pattern, const std::string& job) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      ++i;
      out += pattern[i] == 'j' ? job : std::string(1, pattern[i]);
    } else {
      out += pattern[i];
    }
  }
  return out;
}

namespace detail {

void Loader::read_control(const toml::table* t, const std::string& path) {
  ControlConfig& c = m_cfg.control;
  Origin origin = Origin::default_value;
  if (t) {
    Reader r(*t, "control", path);
    if (auto v = r.string("socket")) {
      c.socket = *v;
      origin = Origin::file;
      std::string where = r.where(*r.get("socket"));
      if (!c.socket.empty()) {
        std::string why = pattern_problem(c.socket);
        for (auto it = m_cfg.jobs.begin(); why.empty() && it != m_cfg.jobs.end(); ++it) {
          why = path_problem(control_socket_path(c.socket, it->first));
          if (!why.empty()) why += fmt::format(" (job {})", it->first);
        }
        if (why.empty() && m_cfg.jobs.empty()) why = path_problem(control_socket_path(c.socket, "job"));
        if (!why.empty()) throw ConfigError(fmt::format("{}: control.socket \"{}\" {}", where, c.socket, why));
      }
    }
    r.refuse_unknown();
  }
  set("control.socket", c.socket, origin);
}

}  // namespace detail

}  // namespace goarchive::config

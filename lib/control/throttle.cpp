#include "control/throttle.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "db/error.h"
#include "util/strings.h"

namespace goarchive::control {

namespace {

// The query's first column as a number; nullopt when it is not one (e.g. 'busy').
std::optional<double> as_number(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> hold_reason(const config::ThrottleConfig& cfg, const Reading& r) {
  if (cfg.max_threads_running > 0 && r.threads_running && *r.threads_running >= cfg.max_threads_running) {
    return fmt::format("Threads_running {} >= max_threads_running {}", *r.threads_running, cfg.max_threads_running);
  }
  if (!cfg.query.empty() && r.query_ran) {
    if (!r.query_error.empty()) return fmt::format("throttle query failed: {}", r.query_error);
    if (!r.query_row) return std::nullopt;
    if (!r.query_value) return std::string("throttle query returned NULL");
    auto v = as_number(*r.query_value);
    if (!v) return fmt::format("throttle query returned '{}', not a number", r.query_value->substr(0, 40));
    if (*v != 0) return fmt::format("throttle query returned {}", trim(*r.query_value));
  }
  return std::nullopt;
}

std::optional<std::string> critical_reason(const config::ThrottleConfig& cfg, long long threads_running) {
  if (cfg.critical_threads_running > 0 && threads_running >= cfg.critical_threads_running) {
    return fmt::format("Threads_running {} >= critical_threads_running {}", threads_running,
                       cfg.critical_threads_running);
  }
  return std::nullopt;
}

long long threads_running(db::Connection& conn) {
  db::RowSet r = conn.query("SHOW GLOBAL STATUS LIKE 'Threads_running'");
  if (r.rows() != 1 || r.cols() < 2) throw Error(fmt::format("{} does not report Threads_running", conn.label()));
  return std::stoll(r.text(0, 1));
}

Throttle::Throttle(const config::ThrottleConfig& cfg) : m_cfg(cfg) {}

std::optional<std::string> Throttle::hold_reason(db::Connection& source) {
  if (!enabled()) return std::nullopt;
  Reading reading;
  if (m_cfg.max_threads_running > 0) reading.threads_running = threads_running(source);
  if (!m_cfg.query.empty()) {
    reading.query_ran = true;
    try {
      db::RowSet r = source.query(m_cfg.query);
      if (r.rows() > 0 && r.cols() > 0) {
        reading.query_row = true;
        reading.query_value = r.get(0, 0);
      }
    } catch (const db::DbError& e) {
      if (e.connection_lost()) throw;
      reading.query_error = e.what();
    }
  }
  return control::hold_reason(m_cfg, reading);
}

bool Throttle::critical(db::Connection& source, std::string& why) {
  if (m_cfg.critical_threads_running <= 0) return false;
  auto reason = critical_reason(m_cfg, threads_running(source));
  if (!reason) return false;
  why = *reason;
  return true;
}

}  // namespace goarchive::control

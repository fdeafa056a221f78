#pragma once
// Throttling on source load for archive and purge ([throttle], DESIGN.md §4): hold at a batch boundary while the
// source is busy, stop cleanly when it is critically busy. Decides only; the run loop waits, logs and counts.
#include <optional>
#include <string>

#include "config/config.h"
#include "db/connection.h"

namespace goarchive::control {

// What one check read from the source.
struct Reading {
  std::optional<long long> threads_running;  // SHOW GLOBAL STATUS Threads_running; nullopt = not read
  bool query_ran = false;                    // the throttle query was sent
  bool query_row = false;                    // it returned at least one row
  std::optional<std::string> query_value;    // first column of its first row; nullopt = NULL
  std::string query_error;                   // non-empty: the server refused the query
};

// Why to hold, or nullopt. Pure: unit-tested on recorded values. Threads_running counts goarchive's own SHOW too.
// The query holds on a non-zero number, on NULL, on a value that is not a number and on an error; an empty result
// or 0 does not hold.
std::optional<std::string> hold_reason(const config::ThrottleConfig& cfg, const Reading& reading);
// Why to stop the run at once (critical_threads_running reached), or nullopt. Pure.
std::optional<std::string> critical_reason(const config::ThrottleConfig& cfg, long long threads_running);

class Throttle {
public:
  explicit Throttle(const config::ThrottleConfig& cfg);
  // Whether any gate is on; when false, hold_reason and critical send nothing.
  bool enabled() const { return m_cfg.enabled(); }
  // Why to hold now, read on the source connection (SHOW GLOBAL STATUS and the throttle query), or nullopt.
  // A lost connection is thrown (db::DbError); any other error of the throttle query is a reason to hold.
  std::optional<std::string> hold_reason(db::Connection& source);
  // True when Threads_running reached critical_threads_running; `why` then says so. One SHOW when enabled.
  bool critical(db::Connection& source, std::string& why);
  // Seconds between checks while holding.
  double check_interval() const { return m_cfg.check_interval; }
  // Seconds one hold may last before the run stops cleanly with exit 4 (as [replication] max_hold); 0 = forever.
  double max_hold() const { return m_cfg.max_hold; }
  const config::ThrottleConfig& config() const { return m_cfg; }

private:
  config::ThrottleConfig m_cfg;
};

// Threads_running of the server (SHOW GLOBAL STATUS; MariaDB and MySQL).
long long threads_running(db::Connection& conn);

}  // namespace goarchive::control

#pragma once
// The end-of-run summary (text table and JSON) and the progress display.
#include <atomic>
#include <optional>
#include <string>

#include "pipeline/stats.h"

namespace goarchive::report {

struct RunInfo {
  std::string job, mode, reason;
  unsigned long long run_id = 0;
  int exit_code = 0;
  double seconds = 0;
  double t_throttled = 0;  // seconds held by [throttle] (source load); pipeline::Stats::t_held is replication
};

std::string summary_text(const RunInfo& info, const pipeline::Stats& stats);
std::string summary_json(const RunInfo& info, const pipeline::Stats& stats);
// `--statistics`: one row per phase (seconds, share of the run's wall time, per batch). Phases overlap in the
// pipelined loop, so the shares need not add up to 100%.
std::string statistics_text(const RunInfo& info, const pipeline::Stats& stats);
// Prometheus text format for node_exporter's textfile collector. Every value describes the last run, so every
// metric is a gauge and none ends in _total (Prometheus naming: _total is for counters).
std::string metrics_text(const RunInfo& info, const pipeline::Stats& stats, double finished_unix_time,
                         bool success);

// Set while a progress line is drawn on the terminal; the log sink clears the line before writing.
std::atomic<bool>& progress_line_drawn();

// One progress line: "<state> | roots R/~T (P%) | rows N | X rows/s | batch B | ETA E". `total` is the roots
// expected (nullopt = unknown: "roots R/?" with no percentage and "ETA ?"); a total below the roots done is
// raised to them, so the line never claims more than 100% or a negative time left.
std::string progress_line(const pipeline::Stats& stats, const std::string& state,
                          std::optional<unsigned long long> total, double elapsed);

// A progress display: redrawn in place on a terminal, one line per interval otherwise.
class Progress {
public:
  // `estimated_roots`: the roots expected to match `where` (nullopt when nothing tells them honestly).
  Progress(bool enabled, bool terminal, double interval, std::optional<unsigned long long> estimated_roots);
  void update(const pipeline::Stats& stats, const std::string& state);
  // The last line, whatever the interval: a "finished" run shows its roots as the total (100%); a "stopped" or
  // "failed" one shows where it stopped.
  void finish(const pipeline::Stats& stats, const std::string& status);
  std::optional<unsigned long long> estimated_roots() const { return m_estimate; }

private:
  void show(const std::string& line, bool force);

  bool m_enabled, m_terminal;
  double m_interval;
  std::optional<unsigned long long> m_estimate;
  double m_started, m_last = -1;
  bool m_drawn = false;
};

}  // namespace goarchive::report

#pragma once
// The end-of-run summary (text table and JSON) and the progress display.
#include <atomic>
#include <string>

#include "pipeline/stats.h"

namespace goarchive::report {

struct RunInfo {
  std::string job, mode, reason;
  unsigned long long run_id = 0;
  int exit_code = 0;
  double seconds = 0;
};

std::string summary_text(const RunInfo& info, const pipeline::Stats& stats);
std::string summary_json(const RunInfo& info, const pipeline::Stats& stats);
// Prometheus text format for node_exporter's textfile collector.
std::string metrics_text(const RunInfo& info, const pipeline::Stats& stats, double finished_unix_time,
                         bool success);

// Set while a progress line is drawn on the terminal; the log sink clears the line before writing.
std::atomic<bool>& progress_line_drawn();

// A progress display: redrawn in place on a terminal, one line per interval otherwise.
class Progress {
public:
  Progress(bool enabled, bool terminal, double interval, unsigned long long estimated_roots);
  void update(const pipeline::Stats& stats, const std::string& state);
  void finish();

private:
  bool m_enabled, m_terminal;
  double m_interval;
  unsigned long long m_estimate;
  double m_started, m_last = -1;
  bool m_drawn = false;
};

}  // namespace goarchive::report

#pragma once
// The one object the batch loop asks "may I go on?": it owns the stop signals (SIGINT, SIGTERM), max-runtime,
// the sleep between batches, the sentinel file, the gates that hold a run (replication lag, server load), what
// the operator asked through the control socket (pause, resume, stop, batch_size and sleep: app/steering.h) and
// the lock-loss check of the heartbeat. It decides and waits; it never touches rows.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/steering.h"
#include "config/config.h"
#include "pipeline/stats.h"
#include "report/summary.h"

namespace goarchive::app {

// A reason to hold the run, asked again every `interval` seconds while it holds; nullopt = go.
struct HoldCheck {
  std::string name;  // "replication", "throttle"
  std::function<std::optional<std::string>()> check;
  double interval = 1;
  double max_hold = 0;  // seconds; 0 = hold as long as it takes
};

class RunControl {
public:
  // `job` is the run's own copy: a batch_size or sleep the operator sets is written into it at a boundary.
  RunControl(config::Job& job, double max_runtime, report::Progress& progress);

  // SIGINT and SIGTERM end the run at its next batch boundary.
  static void install_signal_handlers();

  // Called by the heartbeat's owner: throws when a lock set is lost (the run stops, even while it waits).
  void set_lock_check(std::function<void()> check) { m_lock_check = std::move(check); }
  void add_gate(HoldCheck gate) { m_gates.push_back(std::move(gate)); }
  // The control socket's requests (pause, resume, stop, set) are obeyed at batch boundaries; `steering` outlives
  // this object.
  void set_steering(Steering* steering);

  // At a batch boundary: applies a new batch_size / sleep, sleeps `sleep`, pauses while the sentinel file exists
  // and while the operator paused the run, and answers false when a signal, `goarchive ctl stop` or max-runtime
  // asks the run to stop (stop_reason() then says why).
  bool may_continue();
  // Waits while a gate holds; throws BusyError (exit 4) once a gate held longer than its max_hold.
  void hold_while_gated(const char* phase);
  void show(const pipeline::Stats& stats, const char* phase);

  bool stop_requested();
  // A signal arrived, or the operator asked the run to stop (`goarchive ctl stop`, which counts as SIGTERM).
  bool signalled() const;
  const std::string& stop_reason() const { return m_reason; }
  int stop_code() const { return m_code; }
  // Seconds the gate named `gate` held the run (all gates when empty).
  double held_seconds(const std::string& gate = "") const;
  // A check that ends the run at the next boundary, cleanly, with exit 4 (critical_threads_running).
  void set_critical_check(std::function<std::optional<std::string>()> check) { m_critical = std::move(check); }
  // A check that ends the run at the next boundary, cleanly, with exit 1 (a table's definition changed).
  void set_drift_check(std::function<std::optional<std::string>()> check) { m_drift = std::move(check); }

private:
  void wait(double seconds);  // sleeps in slices, checking the locks and the signals
  void apply_settings();      // a batch_size / sleep the operator set, into m_job
  bool hold_while_paused();   // false: asked to stop while paused
  void publish(const char* phase);  // what status shows

  config::Job& m_job;
  double m_max_runtime;
  report::Progress& m_progress;
  std::chrono::steady_clock::time_point m_started;
  std::function<void()> m_lock_check;
  std::vector<HoldCheck> m_gates;
  pipeline::Stats m_stats;
  bool m_first_boundary = true;
  std::string m_reason;
  int m_code = 0;
  std::map<std::string, double> m_held;  // by gate name
  std::function<std::optional<std::string>()> m_critical;
  std::function<std::optional<std::string>()> m_drift;
  Steering* m_steering = nullptr;
};

}  // namespace goarchive::app

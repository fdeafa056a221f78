#include "app/run_control.h"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal.store(sig); }

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

RunControl::RunControl(config::Job& job, double max_runtime, report::Progress& progress)
    : m_job(job), m_max_runtime(max_runtime), m_progress(progress), m_started(Clock::now()) {}

void RunControl::install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool RunControl::signalled() const {
  return g_signal.load() != 0 || (m_steering && m_steering->stop_requested_by());
}

void RunControl::set_steering(Steering* steering) { m_steering = steering; }

bool RunControl::stop_requested() {
  if (int sig = g_signal.load()) {
    m_reason = sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM";
    m_code = sig == SIGINT ? k_exit_sigint : k_exit_sigterm;
    return true;
  }
  if (auto uid = m_steering ? m_steering->stop_requested_by() : std::nullopt) {
    // The same outcome as SIGTERM (DESIGN.md §3: 143), which a service manager already treats as a clean stop.
    m_reason = fmt::format("stopped by goarchive ctl stop (uid {})", *uid);
    m_code = k_exit_sigterm;
    return true;
  }
  if (m_max_runtime > 0 && since(m_started) >= m_max_runtime) {
    m_reason = fmt::format("max-runtime {} reached", format_duration(m_max_runtime));
    return true;
  }
  return false;
}

void RunControl::wait(double seconds) {
  auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (m_lock_check) m_lock_check();
    if (signalled()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void RunControl::apply_settings() {
  if (!m_steering) return;
  if (auto n = m_steering->take_batch_size()) {
    if (*n != m_job.processing.batch_size) {
      spdlog::info("batch_size {} -> {} (goarchive ctl set), from the next batch", m_job.processing.batch_size, *n);
    }
    m_job.processing.batch_size = *n;
  }
  if (auto s = m_steering->take_sleep()) {
    if (*s != m_job.processing.sleep) {
      spdlog::info("sleep {}s -> {}s (goarchive ctl set), from this batch boundary", m_job.processing.sleep, *s);
    }
    m_job.processing.sleep = *s;
  }
}

// Nothing is open while the run waits here: the loop reaches a boundary with every data transaction committed
// (a delete already under way on the source worker commits on its own). The heartbeat thread goes on renewing
// the run and checking the locks, and wait() stops the run at once when a lock set is lost.
bool RunControl::hold_while_paused() {
  if (!m_steering || !m_steering->pause_requested()) return true;
  struct Holding {
    Steering& s;
    explicit Holding(Steering& steering) : s(steering) { s.set_holding(true); }
    ~Holding() { s.set_holding(false); }
  } holding(*m_steering);
  auto paused_at = Clock::now();
  spdlog::info("paused by goarchive ctl at a batch boundary (no transaction open, the locks kept); goarchive ctl "
               "-j {} resume continues",
               m_job.name);
  while (m_steering->pause_requested()) {
    publish("paused: goarchive ctl");
    m_progress.update(m_stats, "paused: goarchive ctl");
    apply_settings();
    if (stop_requested()) return false;
    wait(0.2);
  }
  spdlog::info("resumed by goarchive ctl after {}", format_duration(since(paused_at)));
  return true;
}

void RunControl::publish(const char* phase) {
  if (!m_steering) return;
  Steering::Shown shown;
  shown.phase = phase;
  shown.batches = m_stats.batches;
  shown.roots = m_stats.roots;
  shown.roots_total = m_progress.estimated_roots();
  shown.tables = m_stats.tables;
  shown.line = report::progress_line(m_stats, phase, shown.roots_total, since(m_started));
  m_steering->show(std::move(shown));
}

bool RunControl::may_continue() {
  if (m_lock_check) m_lock_check();
  apply_settings();
  if (m_job.processing.sleep > 0 && !m_first_boundary) {
    auto until = Clock::now() + std::chrono::duration<double>(m_job.processing.sleep);
    while (Clock::now() < until && !stop_requested()) wait(0.05);
  }
  m_first_boundary = false;
  const std::string& sentinel = m_job.processing.sentinel_file;
  bool announced = false;
  while (!sentinel.empty() && std::filesystem::exists(sentinel)) {
    if (!announced) {
      spdlog::warn("paused: sentinel file {} exists; remove it to continue", sentinel);
      announced = true;
    }
    m_progress.update(m_stats, "paused: sentinel file");
    if (stop_requested()) return false;
    wait(0.5);
  }
  if (announced) spdlog::info("sentinel file gone: continuing");
  if (!hold_while_paused()) return false;
  if (stop_requested()) return false;
  if (m_drift) {
    if (auto why = m_drift()) {
      m_reason = *why;
      m_code = k_exit_failed;
      spdlog::error("{}", m_reason);
      return false;
    }
  }
  if (m_critical) {
    if (auto why = m_critical()) {
      m_reason = "stopped by the throttle: " + *why;
      m_code = k_exit_busy;
      spdlog::warn("{}; the run stops cleanly at this batch boundary", m_reason);
      return false;
    }
  }
  return true;
}

void RunControl::hold_while_gated(const char* phase) {
  for (const auto& gate : m_gates) {
    auto held_since = Clock::now();
    std::optional<std::string> why;
    while ((why = gate.check())) {
      double held = since(held_since);
      spdlog::warn("held before {} by the {} gate: {}", phase, gate.name, *why);
      m_progress.update(m_stats, "held: " + *why);
      if (gate.max_hold > 0 && held >= gate.max_hold) {
        m_held[gate.name] += held;
        throw BusyError(fmt::format("stopped after holding {} for {} ({}); the run stopped cleanly at a batch "
                                    "boundary and resumes on its rerun",
                                    format_duration(held), gate.name, *why));
      }
      wait(gate.interval);
      if (signalled()) break;  // the next boundary stops the run
    }
    m_held[gate.name] += since(held_since);
    if (signalled()) return;
  }
}

double RunControl::held_seconds(const std::string& gate) const {
  double total = 0;
  for (const auto& [name, seconds] : m_held) {
    if (gate.empty() || name == gate) total += seconds;
  }
  return total;
}

void RunControl::show(const pipeline::Stats& stats, const char* phase) {
  m_stats = stats;
  m_stats.t_held = held_seconds("replication");
  m_progress.update(m_stats, phase);
  publish(phase);
}

}  // namespace goarchive::app

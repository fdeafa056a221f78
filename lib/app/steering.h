#pragma once
// What an operator asked a running job through its control socket (pause, resume, stop, new batch_size or sleep)
// and what the run last showed, shared by the socket's thread (app/control_socket.h), which asks, and the run's
// main thread (RunControl, at batch boundaries), which obeys. It holds state and answers; it never waits, never
// touches a session and never decides when a batch ends.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "control/request.h"
#include "pipeline/stats.h"

namespace goarchive::app {

class Steering {
public:
  // What the progress display showed last, for `status`.
  struct Shown {
    std::string phase = "starting";
    std::string line;  // the progress line's text
    unsigned long long batches = 0, roots = 0;
    std::optional<unsigned long long> roots_total;  // the estimate of the roots to move; nullopt = unknown
    std::vector<pipeline::TableStats> tables;
  };

  // The run being steered: its job and command, and the settings it starts with.
  void describe(const std::string& job, const std::string& command, long long batch_size, double sleep);
  void set_run_id(unsigned long long run_id);

  // The socket's thread: carries out `r` from the peer `uid` and returns the one-line JSON reply.
  std::string answer(const control::Request& r, unsigned uid);
  // The reply to a request that could not be read or was not allowed: {"ok":false,...}.
  static std::string refusal(const std::string& error, int exit_code);

  // The main thread, at batch boundaries.
  bool pause_requested() const;
  // Whether the run waits at a boundary for `resume` (status says "paused" rather than "pausing").
  void set_holding(bool holding);
  // The uid that asked the run to stop, once one did.
  std::optional<unsigned> stop_requested_by() const;
  // A new batch_size / sleep asked for since the last call; the caller applies it and the status shows it from
  // then on.
  std::optional<long long> take_batch_size();
  std::optional<double> take_sleep();
  void show(Shown shown);

private:
  std::string status_json() const;  // with m_mutex held
  std::string state() const;        // with m_mutex held

  mutable std::mutex m_mutex;
  std::string m_job, m_command;
  unsigned long long m_run_id = 0;
  std::chrono::steady_clock::time_point m_started = std::chrono::steady_clock::now();
  long long m_batch_size = 0;
  double m_sleep = 0;
  std::optional<long long> m_new_batch_size;
  std::optional<double> m_new_sleep;
  bool m_pause = false, m_holding = false;
  std::optional<unsigned> m_stopper;
  Shown m_shown;
};

}  // namespace goarchive::app

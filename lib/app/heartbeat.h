#pragma once
// The run's heartbeat (seed 001): a thread that checks both lock sets every interval and records the run's
// heartbeat in the registry on a connection of its own. It never stops the run itself: it raises `lost()`,
// which the run checks before every commit and at every boundary.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "db/connection.h"
#include "locks/lock_set.h"
#include "tracking/registry.h"

namespace goarchive::app {

// Seconds between heartbeats; GOARCHIVE_HEARTBEAT_SECONDS shortens it for tests.
double heartbeat_interval();

class Heartbeat {
public:
  Heartbeat(locks::LockSession& src, locks::LockSession& dst, std::unique_ptr<db::Connection> registry_conn,
            const tracking::Registry& registry, unsigned long long job_id, unsigned long long run_id);
  ~Heartbeat() { stop(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void stop();
  // True once a check found a lock set lost.
  bool lost() const { return m_lost.load(); }
  // Replaces the registry session after a lost connection (the engine retries its batch).
  void reconnect(std::unique_ptr<db::Connection> conn);

private:
  void loop();

  locks::LockSession& m_src;
  locks::LockSession& m_dst;
  std::unique_ptr<db::Connection> m_conn;
  std::mutex m_session_mutex;
  const tracking::Registry& m_registry;
  unsigned long long m_job_id, m_run_id;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::atomic<bool> m_lost{false};
  std::thread m_thread;  // last: started once every member above exists
};

}  // namespace goarchive::app

#include "app/heartbeat.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

namespace goarchive::app {

double heartbeat_interval() {
  if (const char* v = std::getenv("GOARCHIVE_HEARTBEAT_SECONDS")) {
    double d = std::atof(v);
    if (d > 0) return d;
  }
  return 30;
}

Heartbeat::Heartbeat(locks::LockSession& src, locks::LockSession& dst, std::unique_ptr<db::Connection> registry_conn,
                     const tracking::Registry& registry, unsigned long long job_id, unsigned long long run_id)
    : m_src(src), m_dst(dst), m_conn(std::move(registry_conn)), m_registry(registry), m_job_id(job_id),
      m_run_id(run_id) {
  m_conn->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  m_thread = std::thread([this] { loop(); });
}

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

void Heartbeat::reconnect(std::unique_ptr<db::Connection> conn) {
  std::lock_guard<std::mutex> g(m_session_mutex);
  conn->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  m_conn = std::move(conn);
}

void Heartbeat::loop() {
  double interval = heartbeat_interval();
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop) {
    m_cv.wait_for(lock, std::chrono::duration<double>(interval), [this] { return m_stop; });
    if (m_stop) break;
    if (!m_src.holds_all() || !m_dst.holds_all()) {
      spdlog::error("heartbeat: a lock set is lost; the run stops before its next commit");
      m_lost = true;
    }
    try {
      std::lock_guard<std::mutex> g(m_session_mutex);
      m_registry.heartbeat(*m_conn, m_job_id, m_run_id);
    } catch (const std::exception& e) {
      spdlog::warn("heartbeat: could not record the heartbeat: {}", e.what());
    }
  }
}

}  // namespace goarchive::app

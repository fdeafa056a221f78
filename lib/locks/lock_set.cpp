#include "locks/lock_set.h"

#include <spdlog/spdlog.h>

#include "plan/sql.h"

namespace goarchive::locks {

namespace {
// A lost client is dropped by the server after this many idle seconds; the heartbeat (30 s) keeps a live
// session busy well within it, and it stays under the chapter's 5 minutes.
constexpr int k_lock_session_wait_timeout = 240;
}  // namespace

LockSession::LockSession(const config::ServerConfig& server, const std::string& purpose) {
  db::ConnectOptions options;
  options.purpose = purpose;
  options.read_timeout = 120;  // the lock session only runs short statements
  m_conn = std::make_unique<db::Connection>(server, options);
  m_conn->execute("SET SESSION wait_timeout = " + std::to_string(k_lock_session_wait_timeout) +
                  ", net_read_timeout = 60, net_write_timeout = 60");
}

void LockSession::name_locks(std::vector<NamedLock>& locks) {
  if (locks.empty()) return;
  std::string q = "SELECT ";
  for (size_t i = 0; i < locks.size(); ++i) {
    if (i) q += ", ";
    q += server_expression(locks[i].kind, sql::quote(locks[i].a), sql::quote(locks[i].b));
  }
  db::RowSet r = m_conn->query(q);
  for (size_t i = 0; i < locks.size(); ++i) locks[i].name = r.text(0, i);
}

int LockSession::acquire(const std::vector<NamedLock>& locks, double timeout_seconds, unsigned long long& holder) {
  std::lock_guard<std::mutex> guard(m_mutex);
  holder = 0;
  for (size_t i = 0; i < locks.size(); ++i) {
    const NamedLock& l = locks[i];
    auto got = m_conn->scalar(fmt::format("SELECT GET_LOCK({}, {})", sql::quote(l.name), timeout_seconds));
    if (got && *got == "1") {
      m_held.push_back(l);
      spdlog::debug("lock {} taken on {} (connection {}): {}", l.name, m_conn->label(), connection_id(), l.description);
      continue;
    }
    auto h = m_conn->scalar("SELECT IS_USED_LOCK(" + sql::quote(l.name) + ")");
    holder = h ? std::stoull(*h) : 0;
    return static_cast<int>(i);
  }
  return -1;
}

bool LockSession::holds_all() noexcept {
  std::lock_guard<std::mutex> guard(m_mutex);
  if (m_held.empty()) return true;
  try {
    std::string q = "SELECT ";
    for (size_t i = 0; i < m_held.size(); ++i) {
      if (i) q += " + ";
      q += "IFNULL(IS_USED_LOCK(" + sql::quote(m_held[i].name) + ") = CONNECTION_ID(), 0)";
    }
    auto n = m_conn->scalar(q);
    return n && std::stoull(*n) == m_held.size();
  } catch (const std::exception& e) {
    spdlog::error("lock session {} failed its check: {}", m_conn->label(), e.what());
    return false;
  }
}

void LockSession::release(const std::string& name) noexcept {
  std::lock_guard<std::mutex> guard(m_mutex);
  try {
    m_conn->execute("DO RELEASE_LOCK(" + sql::quote(name) + ")");
  } catch (const std::exception& e) {
    spdlog::debug("releasing lock {} on {}: {}", name, m_conn->label(), e.what());
  }
  std::erase_if(m_held, [&](const NamedLock& l) { return l.name == name; });
}

void LockSession::release_all() noexcept {
  std::lock_guard<std::mutex> guard(m_mutex);
  try {
    if (!m_held.empty()) m_conn->execute("DO RELEASE_ALL_LOCKS()");
  } catch (const std::exception& e) {
    spdlog::debug("releasing locks on {}: {}", m_conn->label(), e.what());
  }
  m_held.clear();
}

unsigned long long holder_of(db::Connection& conn, const std::string& lock_name) {
  auto h = conn.scalar("SELECT IS_USED_LOCK(" + sql::quote(lock_name) + ")");
  return h ? std::stoull(*h) : 0;
}

}  // namespace goarchive::locks

#pragma once
// The named locks of a run (seed 001): each set on its own dedicated session that is never pooled, reset,
// re-authenticated or reconnected, because any of those silently drops every named lock.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "db/connection.h"
#include "locks/names.h"

namespace goarchive::locks {

struct NamedLock {
  LockKind kind;
  std::string a, b;         // what it stands for: (job_schema, job) or (database, table) or (job_schema, "")
  std::string name;         // as computed by the server that holds it
  std::string description;  // "job x in goarchive", "table shop.orders"
};

// One dedicated session holding a set of named locks.
class LockSession {
public:
  // Opens the session. wait_timeout is set so that a lost host frees the locks within 5 minutes.
  LockSession(const config::ServerConfig& server, const std::string& purpose);

  // Computes each name with the server's own SHA2/LOWER over utf8mb4 (one round trip for all).
  void name_locks(std::vector<NamedLock>& locks);
  // GET_LOCK(name, timeout) for each, in the given order; returns the index of the first lock it could not take
  // (and that lock's holder connection id, 0 if unknown), or -1 when all are held.
  int acquire(const std::vector<NamedLock>& locks, double timeout_seconds, unsigned long long& holder);
  // Releases one lock taken by acquire() (the schema lock, held only while the registry is created).
  void release(const std::string& name) noexcept;
  // True when this session still holds every lock it acquired (one round trip). Never throws.
  bool holds_all() noexcept;
  void release_all() noexcept;
  unsigned long long connection_id() const { return m_conn->info().connection_id; }
  db::Connection& connection() { return *m_conn; }
  const std::vector<NamedLock>& held() const { return m_held; }

private:
  std::unique_ptr<db::Connection> m_conn;
  std::vector<NamedLock> m_held;
  std::mutex m_mutex;
};

// Returns the holder's connection id of a lock, or 0 when it is free (any connection).
unsigned long long holder_of(db::Connection& conn, const std::string& lock_name);

}  // namespace goarchive::locks

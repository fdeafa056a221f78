#include "db/error.h"

#include <fmt/format.h>

namespace goarchive::db {

DbError::DbError(unsigned int code, std::string sqlstate, std::string server, std::string tag,
                 const std::string& message)
    : Error(fmt::format("{} (error {}, SQLSTATE {}) on {}{}", message, code, sqlstate, server,
                        tag.empty() ? "" : " while " + tag)),
      m_code(code), m_sqlstate(std::move(sqlstate)), m_server(std::move(server)), m_tag(std::move(tag)) {}

bool is_connection_lost(unsigned int code) {
  switch (code) {
    case 2006:  // server has gone away
    case 2013:  // lost connection during query
    case 2055:  // lost connection (system error)
    case 4031:  // MySQL 8.0.24+: disconnected for inactivity
    case 1927:  // MariaDB: connection killed
    case 1153:  // ER_NET_PACKET_TOO_LARGE: the server closes the connection after it
    case 2002:  // cannot connect (socket)
    case 2003:  // cannot connect (TCP)
      return true;
    default:
      return false;
  }
}

bool is_retryable(unsigned int code) {
  if (code == 1153) return false;  // see is_retryable(code, sqlstate)
  switch (code) {
    case 1205:  // lock wait timeout
    case 1213:  // deadlock
    case 3058:  // MySQL: user-lock deadlock (MariaDB reports 1213; db::Dialect::lock_deadlock_error)
    case 3572:  // MySQL: NOWAIT lock
      return true;
    default:
      return is_connection_lost(code);
  }
}

bool is_connection_lost(unsigned int code, const std::string& sqlstate) {
  return is_connection_lost(code) || sqlstate == "08S01";
}

bool is_retryable(unsigned int code, const std::string& sqlstate) {
  // A packet too large for max_allowed_packet is too large on the new connection too.
  if (code == 1153) return false;
  return is_retryable(code) || is_connection_lost(code, sqlstate);
}

bool DbError::retryable() const { return is_retryable(m_code, m_sqlstate); }
bool DbError::connection_lost() const { return is_connection_lost(m_code, m_sqlstate); }

}  // namespace goarchive::db

#pragma once
// The one error type for everything a server or Connector/C reports.
#include <string>

#include "util/error.h"

namespace goarchive::db {

class DbError : public Error {
public:
  DbError(unsigned int code, std::string sqlstate, std::string server, std::string tag, const std::string& message);

  unsigned int code() const { return m_code; }
  const std::string& sqlstate() const { return m_sqlstate; }
  const std::string& server() const { return m_server; }
  const std::string& tag() const { return m_tag; }
  // Lock wait timeout, deadlock, lost connection: the work can be retried.
  bool retryable() const;
  // The session is gone (2006, 2013, 4031, 1927, 2055, 1153, SQLSTATE 08S01): its named locks are gone with it.
  bool connection_lost() const;
  bool duplicate_key() const { return m_code == 1062 || m_code == 1586; }

private:
  unsigned int m_code;
  std::string m_sqlstate;
  std::string m_server;
  std::string m_tag;
};

// Classifications as free functions, unit-tested without a server.
bool is_retryable(unsigned int code);
bool is_connection_lost(unsigned int code);
// Also true for any SQLSTATE 08S01 (communication link failure), whatever the code.
bool is_connection_lost(unsigned int code, const std::string& sqlstate);
// Retryable and with the same SQLSTATE rule; 1153 is not: the same statement is too large again.
bool is_retryable(unsigned int code, const std::string& sqlstate);

}  // namespace goarchive::db

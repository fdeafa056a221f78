#pragma once
// Server identities for the unit tests, as real servers report themselves.
#include <string>

#include "schema/catalog.h"

namespace goarchive::test {

// A MariaDB server as the test servers of scripts/servers.sh report themselves (source 1 -> replica 2;
// destination 3): hostname "vm", a datadir per port, GTID state `state`.
inline schema::ServerIdentity maria(unsigned long long id, unsigned port, const std::string& state) {
  schema::ServerIdentity s;
  s.mariadb = true;
  s.server_id = id;
  s.hostname = "vm";
  s.port = port;
  s.datadir = "/tmp/ga/" + std::to_string(port) + "/";
  s.gtid_state = state;
  return s;
}

}  // namespace goarchive::test

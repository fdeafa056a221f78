#pragma once
// What `validate -v` says about the servers: each one's flavour and version, and every behaviour the dialect layer
// (db/dialect.h) takes on it where MariaDB and MySQL differ. Text only; it never connects or runs SQL.
#include <string>

#include "db/connection.h"

namespace goarchive::app {

// "source: MariaDB 10.11.19\n  deletes: ...\n...destination: ...\n"; a server not connected (nullptr) is left out.
std::string server_report(const db::Connection* source, const db::Connection* destination);

}  // namespace goarchive::app

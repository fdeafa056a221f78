#pragma once
// What the connected account may do on a table, read from information_schema (global, schema and table
// grants), and the refusal that names a missing privilege with the GRANT that gives it. Shared by every
// preflight (archive's, restore's). Reads only.
#include <string>
#include <vector>

#include "db/connection.h"

namespace goarchive::app {

// Whether CURRENT_USER() holds `priv` on `database`.`table` ("" table: the whole database) at any level; true
// when the server cannot tell (the statements themselves will say).
bool has_privilege(db::Connection& conn, const std::string& priv, const std::string& database,
                   const std::string& table);

// "" when the account holds every one of `privs` on `database`.`table`; else the failure naming what it lacks
// and the GRANT to run on `where` ("source", "destination", "archive").
std::string missing_privileges(db::Connection& conn, const std::vector<std::string>& privs,
                               const std::string& database, const std::string& table, const std::string& where);

}  // namespace goarchive::app

#pragma once
// "Did you mean" for a name in the config that the source lacks: a table of the source database, a column of a
// table. Shared by discover and preflight so that both word a typo alike. Only reads.
#include <string>

#include "db/connection.h"
#include "schema/catalog.h"

namespace goarchive::app {

// What follows "table X not found in database D; ": "did you mean A?" (the close base tables), else "the
// database has no tables" or "its tables are: a, b, ..." (the first ten).
std::string table_hint(db::Connection& conn, const std::string& database, const std::string& table);

// " (did you mean a?)" for a column `t` lacks, from its close columns; "" when none is close.
std::string column_hint(const schema::TableInfo& t, const std::string& column);

}  // namespace goarchive::app

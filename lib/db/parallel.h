#pragma once
// Independent statements run side by side on several sessions of one server. A CREATE TABLE waits for its own
// fsyncs (the table's file, the DDL log, the binlog with sync_binlog = 1): the eight tables of a new tracking
// schema took 350 ms one after another and 150 ms over four sessions (MariaDB 10.11, production durability).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "db/connection.h"

namespace goarchive::db {

using Opener = std::function<std::unique_ptr<Connection>()>;

// Runs every statement once, in any order: on `conn` alone when `open` is empty or there is only one, else
// spread over `conn` and up to `extra` more sessions that `open` makes (a session that cannot be opened is
// simply not used). An error that `tolerate` accepts is an answer and is ignored; the first other error is
// rethrown once every session has stopped.
void execute_all(Connection& conn, const std::vector<std::string>& statements, const Opener& open, size_t extra,
                 const std::function<bool(const DbError&)>& tolerate);

}  // namespace goarchive::db

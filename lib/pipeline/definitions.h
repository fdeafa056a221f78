#pragma once
// The definitions of a job's tables on one server (every column's name, type, nullability, collation and
// generation, in order), and the guard that a run's deletes check them with. A batch read with the column list
// of the run's start and deleted after a column was added would lose that column's values: the source delete
// checks, under the metadata locks its locked reads hold, that no table of the job changed since the run
// started. Reads information_schema only; it never decides what happens to a batch (remover.cpp does).
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"
#include "pipeline/table_meta.h"

namespace goarchive::pipeline {

// Table name -> its columns' definition, as one text.
using Definitions = std::map<std::string, std::string>;

// The definitions of `tables` in `database` on `conn` now.
Definitions read_definitions(db::Connection& conn, const std::string& database, const std::vector<TableMeta>& tables);

// The message for the first table whose definition in `now` differs from `then` (or is gone); nothing when
// none does. `side` is "source" or "destination".
std::optional<std::string> definition_change(const Definitions& then, const Definitions& now, const char* side,
                                             const std::string& database);

// The source definitions at the run's start, checked by every source delete transaction; remembers the first
// change found, for the run to stop at its next batch boundary. Shared by the worker and the main thread.
class DefinitionGuard {
public:
  DefinitionGuard(std::string database, Definitions at_start)
      : m_database(std::move(database)), m_at_start(std::move(at_start)) {}
  // The change since the start on `conn` (the source, inside the delete's transaction), remembered; nothing
  // when every table is as it was.
  std::optional<std::string> check(db::Connection& conn, const std::vector<TableMeta>& tables);
  // The first change a check found.
  std::optional<std::string> found() const;

private:
  std::string m_database;
  Definitions m_at_start;
  mutable std::mutex m_mutex;
  std::optional<std::string> m_found;
};

}  // namespace goarchive::pipeline

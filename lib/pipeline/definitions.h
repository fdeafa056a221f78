#pragma once
// The definitions of a job's tables on one server (every column's name, type, nullability, collation and
// generation, in order), and the guard that a run's deletes check them with. A batch read with the column list
// of the run's start and deleted after a column was added would lose that column's values: the source delete
// checks, under the metadata locks its locked reads hold, that no table of the job changed since the run
// started. A check first probes each table's SHOW CREATE TABLE text, and reads information_schema only when a
// text is not one it has already found unchanged. Reads metadata only; it never decides what happens to a batch
// (remover.cpp does).
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

// Table name -> its SHOW CREATE TABLE text without the AUTO_INCREMENT counter (probe_text).
using Probes = std::map<std::string, std::string>;

// The probes of `tables` in `database` on `conn` now: one SHOW CREATE TABLE each.
Probes read_probes(db::Connection& conn, const std::string& database, const std::vector<TableMeta>& tables);

// `create` (a SHOW CREATE TABLE text) without the table option AUTO_INCREMENT=n, which the table's inserts move.
// The CREATE TABLE text determines every column's definition, so two tables with the same probe text have the
// same definitions; a different text may still have them (an index added, a default or comment changed).
std::string probe_text(std::string create);

// The message for the first table whose definition in `now` differs from `then` (or is gone); nothing when
// none does. `side` is "source" or "destination".
std::optional<std::string> definition_change(const Definitions& then, const Definitions& now, const char* side,
                                             const std::string& database);

// The definitions of one server at the run's start, checked by every source delete transaction (the source) or
// at every batch boundary (the destination; the source in copy-only); remembers the first change found, for the
// run to stop at its next batch boundary. Shared by the worker and the main thread.
class DefinitionGuard {
public:
  // `side` is "source" or "destination", for the message.
  DefinitionGuard(std::string database, Definitions at_start, const char* side)
      : m_database(std::move(database)), m_at_start(std::move(at_start)), m_side(side) {}
  // The change since the start on `conn`, remembered; nothing when every table is as it was. The probes
  // decide when they are all texts found unchanged before; otherwise information_schema decides, and the
  // probes are learnt when it finds no change and they read the same before and after it (no DDL between).
  std::optional<std::string> check(db::Connection& conn, const std::vector<TableMeta>& tables);
  // The first change a check found.
  std::optional<std::string> found() const;

private:
  std::string m_database;
  Definitions m_at_start;
  const char* m_side;
  mutable std::mutex m_mutex;
  Probes m_known;  // probe texts whose definitions were found unchanged (empty: none yet)
  std::optional<std::string> m_found;
};

}  // namespace goarchive::pipeline

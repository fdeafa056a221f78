#pragma once
// Which index a statement by key is written for, and the statement forms that keep it on that index whatever
// the table's statistics say. Owns the per-run cache of each table's indexes (SHOW INDEX, read once per server
// and table); never decides which rows a statement touches.
//
// Why: a freshly filled table's statistics may say it holds a few dozen rows (mariadb-facts C9); the optimizer
// then plans a key list as a full scan, and a run that reads every batch back that way is quadratic. FORCE INDEX
// keeps a SELECT that reads whole rows on the index. It is not enough where the index covers every column read
// (a key-only read: MariaDB 10.11 then scans the whole index, EXPLAIN type `index`) nor for a DELETE (no index
// hints on a single-table DELETE before MariaDB 11.8; a multi-table DELETE ignores them for a key list): those
// go through key_joins, where each key is one eq_ref lookup.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/connection.h"
#include "plan/sql.h"

namespace goarchive::pipeline {

// A table a statement would read whole: "all of t (ALL)" (or `index`: every entry of an index) and the rows
// the optimizer believes it holds.
struct PlannedScan {
  std::string what;
  double rows = 0;
};
// EXPLAINs `statement` on `conn`: the first table it would read whole; nullopt when every table is read
// through an index (a derived table of literal keys is not a table of the database and is skipped). With
// `index`, a table read through any other index counts too ("t by k_created (range)").
std::optional<PlannedScan> scan_in_plan(db::Connection& conn, const std::string& statement,
                                        const std::string& index = "");
// Whether `table` (`db`.`t`) holds at least `rows` rows, counted (a plain read of at most `rows` index entries):
// the truth where the statistics may lie.
bool holds_at_least(db::Connection& conn, const std::string& table, unsigned long rows);

// One index of a table: its name and its columns in index order.
struct IndexColumns {
  std::string name;
  bool unique = false;
  std::vector<std::string> columns;
};

// Pure: the index a statement on `columns` is written for: PRIMARY when it is exactly those columns, else a
// unique index that is, else the first index whose leading columns are they (in any order); "" when none is.
// Column names compare case-insensitively.
std::string pick_index(const std::vector<IndexColumns>& indexes, const std::vector<std::string>& columns);

// " FORCE INDEX (a, b)" naming `names` (PRIMARY bare, the others quoted); "" for none.
std::string force_index(const std::vector<std::string>& names);

class KeyIndexes {
public:
  KeyIndexes() = default;
  KeyIndexes(KeyIndexes&& other) noexcept : m_tables(std::move(other.m_tables)) {}
  // " FORCE INDEX (...)" naming the index of `table` (`db`.`t`) on `conn` that a statement on `columns` is
  // written for, or "" when the table has none. Reads the table's indexes once per connection.
  std::string hint(db::Connection& conn, const std::string& table, const std::vector<std::string>& columns);
  // The same naming the indexes of either column list (a read whose lists are by one or the other).
  std::string hint(db::Connection& conn, const std::string& table, const std::vector<std::string>& columns,
                   const std::vector<std::string>& or_columns);
  // key_joins of `keys` (values of `columns`) on `table` (`db`.`t`) of `conn`, through the index hint() names,
  // each within statement_budget(conn) and of at most `max_keys` keys.
  std::vector<std::string> joins(db::Connection& conn, const std::string& table,
                                 const std::vector<std::string>& columns, const std::vector<sql::KeyLiterals>& keys,
                                 size_t max_keys = static_cast<size_t>(-1));
  // Whether `table` has an index that starts with a column of `key` other than its first (a key (id, created)
  // and an index on created): the optimizer then weighs that index for every value of a key list.
  bool indexed_apart(db::Connection& conn, const std::string& table, const std::vector<std::string>& key);

private:
  std::vector<std::string> names(db::Connection& conn, const std::string& table,
                                 const std::vector<std::vector<std::string>>& column_lists);
  std::mutex m_mutex;
  std::map<std::pair<const db::Connection*, std::string>, std::vector<IndexColumns>> m_tables;
};

// The rows of `table` (`db`.`t`) whose `columns` equal one of `keys`, as FROM clauses of at most `max_keys`
// keys and about `max_bytes` each: `(SELECT x AS k0, .. UNION ALL SELECT ..) AS k STRAIGHT_JOIN table<hint> ON
// table.a = k.k0 AND ..` — one eq_ref (or ref) lookup of the index per key, the keys read first. The same text
// on MariaDB and MySQL. Keys must be distinct (a key given twice returns its rows twice to a SELECT). Without a
// hint (no index on `columns`), `table WHERE <key list>` instead: a join would scan the table once per key.
// Either text follows `SELECT .. FROM` or `DELETE table FROM`; columns are named `table`.`column` (an alias
// would not do: MariaDB resolves a multi-table DELETE's alias in the default database, error 1046 without one).
std::vector<std::string> key_joins(const std::vector<std::string>& columns, const std::vector<sql::KeyLiterals>& keys,
                                   const std::string& table, const std::string& hint, size_t max_bytes,
                                   size_t max_keys = static_cast<size_t>(-1));
// "`db`.`t`.`a`, `db`.`t`.`b`": `columns` of `table` as a statement over key_joins' text names them.
std::string joined_columns(const std::string& table, const std::vector<std::string>& columns);

}  // namespace goarchive::pipeline

#pragma once
// Rows as bytes: encoded keys, byte-equality (sha256 verification and the delete's re-check, goarchive(1)),
// key literals and chunked key lists for SQL, and how a row is named in a message. Pure functions, no I/O.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"
#include "pipeline/table_meta.h"
#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::pipeline {

// Per column (of `idx`): 4-byte big-endian length + bytes, or 0xffffffff for NULL. Map keys for rows.
std::string encode_values(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx);
// The same for a list of non-NULL values (a root key as the registry stores it).
std::string encode_values(const std::vector<std::string>& values);
bool any_null(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx);
// Every column byte-equal (NULL equal only to NULL). Both row sets have the same columns.
bool same_row(const db::RowSet& a, size_t ra, const db::RowSet& b, size_t rb);
// Copies row r of `from` to the end of `to`.
void append_row(db::RowSet& to, const db::RowSet& from, size_t r);
// The SQL literals of the columns `idx` of row r.
// LIT with each value of a column whose `collations` entry is not "" converted to that collation's character set
// and given that collation (see TableMeta::key_wrap); NULL stays NULL.
sql::KeyLiterals wrap(sql::KeyLiterals lit, const std::vector<std::string>& collations);
sql::KeyLiterals literals(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                          const std::vector<bool>& binary);
sql::KeyLiterals literals(const std::vector<std::string>& values, const std::vector<bool>& binary);
// The same, whole numbers bare where the column (of `idx`, or the value's position) is an integer column.
sql::KeyLiterals literals(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                          const std::vector<bool>& binary, const std::vector<bool>& integer);
sql::KeyLiterals literals(const std::vector<std::string>& values, const std::vector<bool>& binary,
                          const std::vector<bool>& integer);

// Key lists for WHERE clauses: `columns` IN (...) over `keys`, cut into chunks of at most `max_keys` keys and
// about `max_bytes` of text, so that no statement reaches max_allowed_packet.
std::vector<std::string> key_lists(const std::vector<std::string>& columns, const std::vector<sql::KeyLiterals>& keys,
                                   size_t max_bytes, const std::string& alias = "", size_t max_keys = 1000);
// The primary keys of rows `which` of a table of `m` as literals, wrapped (TableMeta::key_wrap) as statements by
// key compare them.
std::vector<sql::KeyLiterals> primary_keys(const TableMeta& m, const db::RowSet& rows,
                                           const std::vector<size_t>& which);
// The primary-key lists of rows `which` of a table.
std::vector<std::string> primary_key_lists(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which,
                                           size_t max_bytes);

// A primary-key condition that matches exactly `count` keys: `a = 1 AND id BETWEEN lo AND hi`.
struct KeyRange {
  std::string where;
  std::string first;  // the least key, as a message names it
  size_t count = 0;
};
// Value k (of the key columns) of key i, as text.
using KeyCell = std::function<std::string_view(size_t i, size_t k)>;
// Keys `which` over integer columns `cols` by range where that is exact: the keys that share every column but
// the last have, in the last, an unbroken run (the usual AUTO_INCREMENT batch, also under a tenant id). Runs are
// cut at `max_count` keys; the other keys go to `rest`, for exact-key lists. The caller checks that every column
// is an integer column. A range matches exactly its keys; where it may be used under a lock: remover.cpp.
std::vector<KeyRange> integer_key_ranges(const std::vector<std::string>& cols, const std::vector<size_t>& which,
                                         const KeyCell& cell, size_t max_count, std::vector<size_t>& rest,
                                         const std::string& alias = "");
// Whether every primary-key column of `m` is an integer column (its keys go by exact ranges).
bool all_integer(const TableMeta& m);
// The primary keys of rows `which` of table `m` by range (integer_key_ranges; every key column must be an integer
// column, or every row goes to `rest`).
std::vector<KeyRange> key_ranges(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which,
                                 size_t max_count, std::vector<size_t>& rest);
// The same for key values as a batch holds its roots' keys.
std::vector<KeyRange> key_ranges(const TableMeta& m, const std::vector<std::vector<std::string>>& keys,
                                 size_t max_count, std::vector<size_t>& rest);
// `column BETWEEN lo AND hi` when the column is an integer column (`integer`) and `values`, its distinct texts,
// are one unbroken run. Nothing otherwise. For plain reads and verification only: a locked read of a range of
// unknown size would also lock the index entry after it.
std::optional<std::string> run_range(const std::string& column, bool integer, const std::vector<std::string>& values,
                                     const std::string& alias = "");

// `salaries (emp_no, from_date) = (10103, '1986-06-26')`: how every message names a row.
std::string name_row(const TableMeta& m, const db::RowSet& rows, size_t r);
std::string name_key(const TableMeta& m, const std::vector<std::string>& key_values);
// `rental (rental_id) = (9)`: a row named by other columns (`names`, at positions `idx` of `rows`).
std::string name_columns(const std::string& table, const std::vector<std::string>& names, const db::RowSet& rows,
                         size_t r, const std::vector<size_t>& idx, const std::vector<bool>& binary);

// Bytes of SQL text one statement may carry on `conn`: well below its max_allowed_packet.
size_t statement_budget(const db::Connection& conn);

}  // namespace goarchive::pipeline

#pragma once
// The destination side's data writes: the copy of a batch (MariaDB's bulk INSERT, else LOAD DATA LOCAL, else
// multi-row INSERTs, built ahead; a duplicate key checked as an answer), its verification by reading its own
// writes back, and the removal of archived copies of roots that stay in the source. Everything runs inside the
// caller's destination transaction; it never commits, never touches the registry and never writes to the source.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/context.h"
#include "pipeline/tree_reader.h"
#include "util/error.h"

namespace goarchive::pipeline {

// Something about one root of the batch that the copy cannot settle: the batch goes on without that root.
class RootError : public Error {
public:
  RootError(const std::string& message, int root) : Error(message), m_root(root) {}
  int root() const { return m_root; }  // index into the batch's roots; -1 when none owns the row

private:
  int m_root;
};

// A row of the batch is in the destination with other content, and nothing proves the archived version may be
// replaced: the root that owns the row in this batch must stay in the source, both versions kept (a conflict).
class RowConflict : public RootError {
public:
  using RootError::RootError;
};

// A root of the batch stays in the source and its batch goes on without it, with no conflict to record: a row of
// its tree is in the destination already, written by another run (a run removes only rows it wrote, so it never
// rests a source delete on a row it merely found), or holds a value of a unique key another archived row holds, or
// a value of it cannot be copied exactly.
class RootStays : public RootError {
public:
  using RootError::RootError;
};

// restore: a row of the root's tree is in the source already with the same content; the root stays archived and
// counts as back (nothing to restore), never as a failure.
class SameRowThere : public RootStays {
public:
  using RootStays::RootStays;
};

class DestinationWriter {
public:
  DestinationWriter(Context& ctx, const TreeReader& tree)
      : m_ctx(ctx), m_tree(tree), m_bulk(ctx.dst.bulk_supported()) {}

  // The INSERT statements and key lists of a batch, built before its copy transaction. Reads only the batch.
  void prebuild(Batch& batch) const;
  // Inserts the batch's rows parent-first. A row already in the destination is checked equal and skipped; one
  // that differs stops the run (goarchive never overwrites an archived row).
  void copy(Batch& batch);
  // Reads the batch back and compares it with what was copied (count or sha256); throws on a mismatch.
  void verify(Batch& batch);
  // Removes the archived copy of `roots` as the destination holds it: the root rows by key, their children
  // found through the destination's tree. For copies an earlier run made (recovery, copy-only marks).
  size_t remove_tree_copies(const Batch& batch, const std::vector<int>& roots);
  // Removes the archived copy of `roots` by the primary key of every row copied for them (in the batch), never
  // by a search through the foreign keys: a row that moved to another root is found all the same.
  size_t remove_copied_rows(const Batch& batch, const std::vector<int>& roots);
  // Removes rows `which[t]` of each table t of `batch` (rows as the destination holds them) by primary key,
  // child-first.
  size_t remove_rows(const Batch& batch, const std::vector<std::vector<size_t>>& which);

private:
  std::vector<Statement> build_inserts(const Batch& batch, size_t t, const std::vector<size_t>& rows) const;
  // Rows `rows` of table t as LOAD DATA LOCAL statements with their in-memory files.
  std::vector<Statement> build_loads(const Batch& batch, size_t t, const std::vector<size_t>& rows) const;
  // Rows `rows` of table t as bulk INSERTs (array binding), each within the destination's packet budget.
  std::vector<Statement> build_bulk(const Batch& batch, size_t t, const std::vector<size_t>& rows) const;
  // Rows `rows` of table t as LOAD DATA LOCAL statements where the destination takes them, else as INSERTs.
  std::vector<Statement> build_fallback(const Batch& batch, size_t t, const std::vector<size_t>& rows) const;
  void run_inserts(Batch& batch, size_t t, const std::vector<Statement>& statements);
  // One bulk INSERT under a savepoint: anything short of every row inserted without a warning (a duplicate key,
  // a value the server refuses or adjusts) is rolled back to the savepoint and the rows go through the LOAD DATA
  // and INSERT paths, which report or settle it exactly as before.
  void run_bulk(Batch& batch, size_t t, const Statement& st);
  // One LOAD DATA LOCAL under a savepoint: anything short of every row inserted without a warning (a duplicate
  // key, which LOCAL turns into a skipped row, or a value the server adjusted) is rolled back to the savepoint
  // and the rows go through the INSERT path, which reports or settles it exactly as before.
  void run_load(Batch& batch, size_t t, const Statement& st);
  void insert_fallback(Batch& batch, size_t t, const std::vector<size_t>& rows);
  // An INSERT that strict mode refused for a value the source holds (a zero or invalid date, an ENUM's '' member):
  // inserted again under k_copy_sql_mode, then read back and compared byte for byte whatever the verification
  // method; a row that did not arrive exactly makes its root stay (RootStays).
  void insert_permissive(Batch& batch, size_t t, const Statement& st);
  // A duplicate key on a unique key other than the primary key: finds the row that meets it, one INSERT at a time,
  // and makes its root stay (RootStays).
  [[noreturn]] void unique_key_clash(const Batch& batch, size_t t, const std::vector<size_t>& rows);
  // restore: a foreign key of the source refused rows (a parent outside the job is gone): finds the row, one
  // INSERT at a time, and makes its root stay in the archive (RootStays naming the missing parent).
  [[noreturn]] void missing_parent(const Batch& batch, size_t t, const std::vector<size_t>& rows);
  // The destination's rows of table T with the primary keys of ROWS' rows WHICH.
  db::RowSet read_by_key(size_t t, const db::RowSet& rows, const std::vector<size_t>& which);
  // The root key (values) a destination row of table t hangs under, found up its foreign keys; nullopt when a
  // parent is missing.
  std::optional<std::vector<std::string>> destination_root_of(size_t t, const db::RowSet& rows, size_t r) const;
  // A differing row whose destination root is a copy-only copy of this job: that copy is stale (copy-only never
  // deletes, so the source holds its rows): removes it and its mark. False when the row is not such a copy.
  bool remove_stale_copy_of(size_t t, const db::RowSet& rows, size_t r);
  size_t delete_by_key(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which);
  // The WHERE clauses that read table t's rows of the batch back for sha256 verification.
  std::vector<std::string> verify_lists(const Batch& batch, size_t t);
  // sha256 of a root table whose key is not all integer columns: reads back the range of the key's first column
  // from the batch's first row to its last (capped) and compares the batch rows found in it; returns the WHERE
  // clauses, by exact key, of the rows it did not find. Nothing when the table does not qualify.
  std::optional<std::vector<std::string>> verify_root_range(const Batch& batch, size_t t, size_t& found);
  // sha256 of a root table whose key is not all integer columns, and at least two rows: verify_root_range reads it
  // back (prebuild then builds no exact-key lists for it).
  bool reads_root_range(const Batch& batch, size_t t) const;
  // Compares the destination rows `there` with the copied rows of table t; counts each copied row once in
  // `found` (and marks it in `seen` when given). Throws on a row that differs.
  void compare_read_back(const Batch& batch, size_t t, const db::RowSet& there, size_t& found,
                         std::vector<bool>* seen) const;
  // The failure of a copy the server refused for a value written into a generated column (dialect's
  // generated_write_error): names the table and its columns that are generated there and how to fix them.
  std::string generated_column_written(const Batch& batch, size_t t, const db::DbError& e);
  // The destination has an index that starts with table t's foreign-key columns (asked once, on `dst`).
  bool fk_indexed(size_t t);

  Context& m_ctx;
  const TreeReader& m_tree;
  // The destination accepts LOAD DATA LOCAL (until it refuses it once: local_infile = OFF). Read by prebuild(),
  // which may run on the reader thread.
  std::atomic<bool> m_load{true};
  // The destination takes MariaDB's bulk INSERT (until one fails in a way that says it does not). A batch built
  // as bulk before a refusal tries it once more, and falls back as the refused one did.
  std::atomic<bool> m_bulk{false};
  std::vector<int> m_fk_indexed;  // per table: -1 not asked yet, else 0/1
};

}  // namespace goarchive::pipeline

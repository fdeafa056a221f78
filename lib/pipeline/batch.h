#pragma once
// The batch model: what one batch is, as plain data with a few named queries. A batch has its roots (keys as
// the registry stores them) and, per table of the tree, the rows read for those roots, each row with the root
// that owns it. The parts of the pipeline fill it in order: the reader (rows), the writer (statements, copied
// and verified counts), the remover (each root's fate, deleted counts), the batch log (registry id, version).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"
#include "tracking/registry.h"
#include "util/strings.h"

namespace goarchive::pipeline {

// An INSERT (or LOAD DATA LOCAL) statement built ahead of time and the rows it carries.
struct Statement {
  std::string sql;
  std::vector<size_t> rows;
  std::string data;  // LOAD DATA LOCAL: the in-memory file it reads; empty for an INSERT
  bool bulk = false;  // sql is an INSERT of one row of placeholders, run for every row at once (array binding)
};

// The rows of one table in one batch.
struct TableRows {
  db::RowSet rows;
  std::vector<int> root;              // per row: index into Batch::roots, -1 when it belongs to none of them
  std::vector<std::string> key;       // per row: encoded primary key
  // The rows by encoded key: an open-addressing table of row numbers + 1 (0 empty), no node per row.
  std::vector<uint32_t> slots;
  // Built ahead (prebuild: on the reader thread after the plain read when it has one, else on the main thread
  // before the copy transaction): the INSERTs, and the primary-key conditions the verification sends (ranges
  // where exact, else exact-key lists).
  std::vector<Statement> inserts;
  std::vector<std::string> key_lists;

  size_t size() const { return rows.rows(); }
  // Registers the row just pushed into `rows` (the next one without a key) with its encoded key and owner.
  void index(std::string encoded_key, int owner);
  std::optional<size_t> find(const std::string& encoded_key) const;
  // Rows owned by root `owner`.
  std::vector<size_t> rows_of(int owner) const;
};

// What becomes of a root of the batch. Every state but `moved` leaves the root in the source.
enum class RootFate {
  moved,      // archived (or purged): deleted from the source
  changed,    // the application changed its tree after the copy; its archived copy is removed
  withdrawn,  // it no longer matches `where`; its archived copy is removed
  conflict,   // recovery cannot prove which version is current: both are kept, the run exits 1
  blocked,    // its tree still belongs to a parent that stays, or is referenced from outside the job (holds.h);
              // its archived copy is removed like `changed`; not an error
};

struct Batch {
  unsigned no = 0;
  unsigned long long id = 0;  // row in the registry's batches table
  unsigned version = 0;       // its version, the guard of every transition
  unsigned next_version = 0;  // the version a transition in an uncommitted transaction will give it
  bool recovery = false;
  bool loaded = false;        // tables already read (in one snapshot)
  bool prebuilt = false;      // statements and key lists built
  bool keyset_end = false;    // the keyset read found no root left (the batch is empty and the loop ends)
  // Recovery of a batch found `deleting`: the rows are the archived copy, which may be the only one left; a
  // root whose source tree differs from it is a conflict, never a reason to replace it.
  bool unproven = false;
  // Recovery of a batch found `deleting` whose commit proof is in the source: its delete committed, so the
  // archived copy is the archive; only the end is left to write.
  bool delete_committed = false;
  std::string proof;  // the commit-proof token of its latest delete transaction (commit_proof.h), or empty
  std::vector<std::vector<std::string>> root_keys;  // key values per root
  std::vector<tracking::RootKey> roots;             // encoded + hash, per root
  std::vector<TableRows> tables;                    // by node index
  std::vector<RootFate> fate;                       // per root
  std::vector<std::string> reasons;                 // a few examples of why roots stayed, for the log
  std::vector<std::string> blocked;                 // why each blocked root stays, one line per root
  std::vector<unsigned long long> copied, verified, deleted;  // per table
  double t_read = 0, t_delete = 0;
  // The source delete's lock window: from its first statement that locks the application's rows to its commit.
  std::chrono::steady_clock::time_point locked_since{};
  double t_locked = 0;

  size_t count(RootFate f) const;
  bool stays(size_t root) const { return root < fate.size() && fate[root] != RootFate::moved; }
  // Sets a root's fate unless it already has one that leaves it in the source; keeps a few reasons.
  void leave(size_t root, RootFate f, const std::string& reason);
  // Roots whose fate is `f`, as indexes.
  std::vector<int> roots_with(RootFate f) const;
  // Forgets the rows of the roots for which `drop` is true, in every table.
  void drop_rows_of(const std::vector<bool>& drop);
  // Adds a root by its key values.
  void add_root(std::vector<std::string> key);
  // Adds a root by its key values and their registry encoding (tracking::encode_key of the same values).
  void add_root(tracking::RootKey encoded, std::vector<std::string> key);
  // Removes root `r` and every row it owns; later roots move down by one.
  void remove_root(size_t r);
};

// True when root `root` has the same rows, byte for byte, in both batches (which hold the same roots).
bool same_tree(const Batch& a, const Batch& b, int root);

}  // namespace goarchive::pipeline

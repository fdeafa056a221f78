#pragma once
// The batch pipeline of DESIGN.md §5: select roots, discover children, copy parent-first, verify, delete
// child-first — with the tracking log written in the same destination transaction as the copy.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "plan/sql.h"
#include "plan/tree.h"
#include "schema/catalog.h"
#include "tracking/registry.h"

namespace goarchive::pipeline {

enum class Mode { archive, copy_only, purge };

// One table of the tree with everything the SQL needs.
struct TableMeta {
  plan::Node node;
  schema::TableInfo source;
  std::string source_name;       // `db`.`table` on the source
  std::string destination_name;  // `db`.`table` on the destination
  std::vector<std::string> columns;   // data columns (stored, not generated), in order
  std::vector<bool> binary;           // per data column
  std::vector<size_t> key_idx;        // primary key columns, positions in `columns`
  std::vector<std::string> key_cols;  // primary key column names
  std::vector<size_t> fk_idx;         // this table's foreign-key columns (children)
  std::vector<size_t> parent_ref_idx; // the referenced columns, positions in the parent's `columns`
  std::string select_list;            // quoted column list
  // A foreign-key column compares by collation ('abc' = 'ABC ' under a _ci, PAD SPACE collation): children are
  // then matched to their parent row by the server, through a join that returns the parent's exact key bytes.
  bool collated_fk = false;
};

struct TableStats {
  std::string table;
  unsigned long long copied = 0, verified = 0, deleted = 0, skipped_existing = 0;
};

struct Stats {
  std::vector<TableStats> tables;  // by node index
  unsigned long long batches = 0, roots = 0, roots_done = 0, roots_changed = 0, recovered = 0, retries = 0;
  double t_select = 0, t_copy = 0, t_verify = 0, t_delete = 0, t_held = 0;
  double t_wait_source = 0;  // the main thread waiting for the source side (pipelined loop)
};

// Builds the table metadata of a job from the source catalog (preflight has already checked it).
std::vector<TableMeta> describe(const plan::Tree& tree, const std::vector<schema::TableInfo>& source_tables,
                                const config::Job& job, const std::string& source_db, const std::string& dest_db);

// An INSERT statement built ahead of time and the batch rows it carries.
struct Statement {
  std::string sql;
  std::vector<size_t> rows;
};

// The rows of one table in one batch.
struct TableBatch {
  db::RowSet rows;
  std::vector<int> root_of;           // per row: index into Batch::roots
  std::vector<std::string> key;       // per row: encoded primary key
  std::vector<std::string> digest;    // per row: SHA-256 of the row serialisation (sha256 mode)
  std::map<std::string, size_t> by_key;
  // Built ahead (on the source worker, beside the previous batch's copy): the INSERTs and the key conditions
  // the copy and the verification send.
  std::vector<Statement> inserts;
  std::vector<std::string> key_conditions;
};

struct Batch {
  unsigned no = 0;
  unsigned long long id = 0;  // row in the registry's batches table
  unsigned version = 0;       // its version, the guard of every transition
  unsigned next_version = 0;  // the version a transition in an uncommitted transaction will give it
  bool recovery = false;
  bool loaded = false;        // tables already read (in one snapshot) by read_new_batch
  bool prebuilt = false;      // digests and statements built (prebuild)
  // Filled by the source side (remove_source), merged into Stats by complete() on the main thread.
  std::vector<unsigned long long> deleted;  // per table
  std::vector<bool> dirty;                  // per root: changed since its copy, left in the source
  std::vector<bool> withdrawn;              // per root (recovery): no longer matches `where`: not archived
  std::vector<std::string> reasons;
  std::vector<unsigned long long> copied;   // per table, counted into Stats once the copy commits
  std::vector<unsigned long long> verified;
  double t_read = 0, t_delete = 0;
  std::vector<std::vector<std::string>> root_keys;  // key values per root
  std::vector<tracking::RootKey> roots;             // encoded + hash
  std::vector<TableBatch> tables;                   // by node index
};

// What the engine asks its owner at every batch boundary and before every commit.
struct Hooks {
  std::function<void()> before_commit;               // throws when a lock set is lost
  std::function<bool(const char* phase)> boundary;   // false: stop cleanly now (signal, max-runtime, ...)
  std::function<void(const char* phase)> gate;       // replication gate; may block
  std::function<void(const Stats&, const char* phase)> progress;
};

class Engine {
public:
  Engine(Mode mode, const config::Job& job, std::vector<TableMeta> tables, db::Connection& source,
         db::Connection& destination, const tracking::Registry& registry, unsigned long long job_id,
         unsigned long long run_id, std::string scope, Hooks hooks);

  // Finishes the job's unfinished roots, then archives batch after batch until nothing is left or a hook
  // says stop. Returns false when it stopped early.
  bool run();
  const Stats& stats() const { return m_stats; }
  // Continues counting from an earlier engine of the same run (after a retry).
  void carry_over(const Stats& stats) { m_stats = stats; }
  unsigned changed_roots() const { return static_cast<unsigned>(m_stats.roots_changed); }

  // The SQL a batch would send, for dry-run.
  std::vector<std::string> sample_sql() const;

private:
  bool recover();
  bool batch_loop();
  void process(Batch& batch);
  // Reads the next batch after `after` in key order: root rows by keyset, then their trees, in one snapshot.
  void read_new_batch(Batch& batch, const std::vector<std::string>* after, bool filter_copied = true);
  void read_snapshot(Batch& batch);
  std::string keyset_query(const std::vector<std::string>* after, const std::string& columns) const;
  void load_roots(db::Connection& conn, const std::string& table_name, Batch& batch, bool for_update);
  void discover(db::Connection& conn, bool destination, Batch& batch, bool for_update);
  void compute_digests(Batch& batch);
  void claim(Batch& batch);
  void write_finish(Batch& batch);
  void finish(std::vector<Batch*>& batches);
  void finish_all(std::vector<std::unique_ptr<Batch>>& batches);
  void prepare_after(Batch& batch, std::vector<std::unique_ptr<Batch>>& pending, const std::function<void()>& settle);
  void account(Batch& batch);
  void refresh(Batch& batch, const std::vector<int>& roots);
  // Drops the rows of the roots for which `drop` is true from every table of the batch.
  void drop_roots(Batch& batch, const std::vector<bool>& drop);
  void copy(Batch& batch);
  void insert_rows(Batch& batch, size_t t, const std::vector<size_t>& rows);
  std::vector<Statement> build_inserts(const Batch& batch, size_t t, const std::vector<size_t>& rows) const;
  void run_inserts(Batch& batch, size_t t, const std::vector<Statement>& statements);
  // Digests and statements of a batch, built before its copy (on the worker in the pipelined loop).
  void prebuild(Batch& batch);
  void insert_fallback(Batch& batch, size_t t, const std::vector<size_t>& rows);
  void verify(Batch& batch);
  // The three stages of a batch. prepare and complete use the destination connection; remove_source uses only
  // the source connection, so that the pipelined loop can run it beside the next batch's prepare.
  void prepare(Batch& batch, std::vector<Batch*>& finished);
  void remove_source(Batch& batch);
  // archive: the batch moves from copied to deleting in a transaction of its own, before its source delete.
  void mark_deleting(Batch& batch);
  bool deletes() const { return m_mode != Mode::copy_only; }
  bool pipelined_loop();
  std::string row_digest(const db::RowSet& rows, size_t r) const;
  std::string encode_row_key(const TableMeta& m, const db::RowSet& rows, size_t r) const;
  sql::KeyLiterals literals(const TableMeta& m, const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                            const std::vector<bool>& binary) const;
  std::string in_clause(const std::vector<std::string>& cols, const std::vector<sql::KeyLiterals>& keys) const;
  std::string in_clause_alias(const std::vector<std::string>& cols, const std::vector<sql::KeyLiterals>& keys,
                              const std::string& alias) const;
  size_t chunk_rows() const;

  Mode m_mode;
  const config::Job& m_job;
  std::vector<TableMeta> m_tables;
  std::vector<int> m_copy_order;
  db::Connection& m_src;
  db::Connection& m_dst;
  const tracking::Registry& m_registry;
  unsigned long long m_job_id, m_run_id;
  std::string m_scope;
  Hooks m_hooks;
  Stats m_stats;
  unsigned m_batch_no = 0;
  bool m_has_changed_marks = false;
  bool m_has_copied_marks = false;  // archive after copy-only: roots this job copied before may need a refresh
  std::vector<std::string> m_next_after;  // key of the last root the latest keyset read returned  // this job left changed roots in the source on an earlier run
};

}  // namespace goarchive::pipeline

#pragma once
// The tracking registry in job_schema on the destination (DESIGN.md §7, seed 000).
// Every state write names the state it expects and checks the affected row count.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/connection.h"
#include "db/parallel.h"
#include "guard/gtid.h"

namespace goarchive::tracking {

// A root's key as stored in the log: encoded values and a 16-byte hash for the unique claim index.
struct RootKey {
  std::string encoded;  // per column: 4-byte big-endian length + bytes
  std::string hash;     // first 16 bytes of SHA-256(encoded)
};
RootKey encode_key(const std::vector<std::string>& values);
std::vector<std::string> decode_key(const std::string& encoded);

struct JobRow {
  unsigned long long id = 0;
  std::string name, command, status;
  std::optional<unsigned long long> run_id;
  unsigned long long version = 0;
  bool live = false;  // heartbeat within the last 60 seconds (registry clock)
};

// Another job that blocks this run under the unfinished-work guard.
struct GuardHit {
  std::string name, status;
  bool live = false;
  unsigned long long copied = 0, deleting = 0;
  std::vector<std::string> shared_tables;  // "db.table"
  guard::SourceIdentity source;
};

// An unfinished batch of the log, for recovery.
struct BatchRow {
  unsigned long long id = 0;
  std::string state;
  unsigned version = 0;
  std::vector<std::string> root_keys;  // encoded keys
};

// The source a job's row records (where its unfinished work came from) and that work's size.
struct RecordedSource {
  guard::SourceIdentity source;  // host (or socket), port, database, flavor, server_id, server_uuid
  std::string root_table;
  unsigned long long unfinished_roots = 0;   // in copied or deleting batches
  unsigned long long other_scope_roots = 0;  // of those, in batches of another scope than this run's
};

// The batch's root keys as one blob (u32 length + encoded key, per root) and back.
std::string pack_keys(const std::vector<RootKey>& keys);
std::vector<std::string> unpack_keys(const std::string& blob);


class Registry {
public:
  Registry(std::string schema) : m_schema(std::move(schema)) {}
  const std::string& schema() const { return m_schema; }
  // Recovery (unfinished_batches, unfinished_counts) sees only batches of this scope (see app::root_scope).
  void restrict_to_scope(std::string scope) { m_scope = std::move(scope); }
  std::string table(const char* name) const;  // `schema`.`name`

  // True when the schema exists and carries the latest migration.
  bool ready(db::Connection& conn) const;
  // Creates the schema and applies missing migrations. The caller holds the schema lock. `open` (optional) gives
  // more sessions to the same server: a migration of new tables only creates them side by side.
  void create(db::Connection& conn, const db::Opener& open = {}) const;

  // Finds or creates the job's row (a duplicate key is an answer: the row exists) and records its source and
  // tables, unless the job has unfinished work: its recorded source then stays as it is. Returns the row.
  JobRow ensure_job(db::Connection& conn, const std::string& name, const std::string& command,
                    const guard::SourceIdentity& source, const std::string& destination_database,
                    const std::string& root_table, const std::vector<std::pair<std::string, std::string>>& tables,
                    const std::vector<std::string>& table_keys) const;
  std::optional<JobRow> find_job(db::Connection& conn, const std::string& name) const;

  // Starts a run: the job row moves to running, guarded by its version; a 'running' run of this job with a live
  // heartbeat (registry clock, 60 s) refuses the start (BusyError naming its host and pid); a stale one is closed
  // as 'crashed' by a guarded write; the new run row takes the job's single active slot (I1). Returns the run id.
  unsigned long long start_run(db::Connection& conn, const JobRow& job, const std::string& command,
                               unsigned long long source_conn, unsigned long long dest_conn) const;
  void heartbeat(db::Connection& conn, unsigned long long job_id, unsigned long long run_id) const;
  // Ends the run and the job's running status (guarded: only this run may end it).
  void finish_run(db::Connection& conn, unsigned long long job_id, unsigned long long run_id, const std::string& status,
                  int exit_code, const std::string& reason, const std::string& summary_json) const;

  // Claims a batch (I2): a guarded write on the scope's row (see tracking_schema), a check that no other job's
  // unfinished batch in the scope holds one of these roots, then the batch row in `state`. Returns its id.
  unsigned long long claim_batch(db::Connection& conn, unsigned long long job_id, unsigned long long run_id,
                                 unsigned batch_no, const std::string& scope, const std::vector<RootKey>& keys,
                                 const std::string& state) const;
  // Adopts an unfinished batch into this run (recovery); guarded by its version. Returns the new version.
  unsigned adopt(db::Connection& conn, unsigned long long batch_id, unsigned long long run_id, unsigned batch_no,
                 unsigned version) const;
  // Moves a batch from one of `from` to `to`, guarded by state and version (I6). Returns the new version.
  unsigned transition(db::Connection& conn, unsigned long long batch_id, const std::vector<std::string>& from,
                      const std::string& to, unsigned version, unsigned changed = 0) const;
  // Per-root marks ('changed', 'copied'): set, read back for a set of roots, count, remove.
  void mark_roots(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes,
                  const std::string& state, const std::vector<std::string>* keys = nullptr) const;
  std::vector<std::string> marked(db::Connection& conn, unsigned long long job_id,
                                  const std::vector<std::string>& hashes, const std::string& state) const;
  unsigned long long count_marked(db::Connection& conn, unsigned long long job_id, const std::string& state) const;
  void unmark(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes) const;
  // copy-only's marks with their keys (written by mark_roots with `keys`), paged by hash.
  std::vector<RootKey> marked_keys(db::Connection& conn, unsigned long long job_id, const std::string& state,
                                   const std::string& after_hash, size_t limit) const;
  // The roots a batch's delete left in the source (batch_stayed), written with its move to deleting; each
  // decision replaces the batch's earlier one (keeping none removes it).
  void record_stayed(db::Connection& conn, unsigned long long batch_id, const std::vector<RootKey>& keys) const;
  std::vector<std::string> stayed(db::Connection& conn, unsigned long long batch_id) const;  // encoded keys
  // The commit-proof token of a batch's latest move to deleting (batch_proofs); empty TOKEN forgets it.
  void record_proof(db::Connection& conn, unsigned long long batch_id, const std::string& token) const;
  std::string proof(db::Connection& conn, unsigned long long batch_id) const;  // raw 16 bytes, or ""
  // Conflicts (DESIGN.md §5): roots kept on both sides until a person removes one version.
  void add_conflicts(db::Connection& conn, unsigned long long job_id, unsigned long long batch_id,
                     const std::vector<RootKey>& keys) const;
  std::vector<std::string> conflicts(db::Connection& conn, unsigned long long job_id) const;  // encoded keys
  void resolve_conflicts(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes) const;
  // Open conflicts per job id, for `jobs` (one query for every job).
  std::map<unsigned long long, unsigned long long> conflict_counts(db::Connection& conn) const;
  // The first `limit` open conflicts of a job, oldest first: their encoded root keys (decode_key).
  std::vector<std::string> conflict_keys(db::Connection& conn, unsigned long long job_id, size_t limit) const;
  // Unfinished batches of a job, in id order after `after_id`.
  std::vector<BatchRow> unfinished_batches(db::Connection& conn, unsigned long long job_id,
                                           unsigned long long after_id, size_t limit) const;
  // Unfinished roots of a job: (in copied batches, in deleting batches).
  // The commands of the runs that last took each unfinished batch of the job (in this scope), without repeats.
  std::vector<std::string> unfinished_commands(db::Connection& conn, unsigned long long job_id) const;
  std::pair<unsigned long long, unsigned long long> unfinished_counts(db::Connection& conn,
                                                                      unsigned long long job_id) const;
  // Deletes done batches older than the retention, in small chunks.
  unsigned long long prune(db::Connection& conn, unsigned long long job_id, double retention_days) const;

  // The job's recorded source and its unfinished work (`scope`: this run's root scope).
  RecordedSource recorded_source(db::Connection& conn, unsigned long long job_id, const std::string& scope) const;

  // Other jobs sharing one of `table_keys` that are running or hold unfinished roots.
  std::vector<GuardHit> guard_candidates(db::Connection& conn, unsigned long long self_job_id,
                                         const std::vector<std::string>& table_keys) const;

private:
  std::string scope_filter(const char* alias) const;

  std::string m_schema;
  std::string m_scope;
};

// True when `now` is the source the job recorded: same flavor, server (server_id, server_uuid), configured
// address and database.
bool same_recorded_source(const RecordedSource& recorded, const guard::SourceIdentity& now);

// Refuses (Error, exit 1) a run whose job holds unfinished work recorded for another source or another root
// scope, naming the recorded source and the way out. Call after ensure_job, before recovery.
void check_recorded_source(const Registry& registry, db::Connection& conn, const JobRow& job,
                           const guard::SourceIdentity& now, const std::string& scope);

}  // namespace goarchive::tracking

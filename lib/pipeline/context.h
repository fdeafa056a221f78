#pragma once
// What every part of the batch pipeline shares: the mode, the job, its tables, both data connections, the
// registry, the owner's hooks and the run's counters. The Engine owns one Context; the parts (reader, writer,
// remover, batch log, recovery, loop) hold a reference to it and never outlive it.
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "pipeline/batch_sizer.h"
#include "pipeline/key_index.h"
#include "pipeline/stats.h"
#include "pipeline/table_meta.h"
#include "tracking/registry.h"

namespace goarchive::pipeline {

// restore runs the pipeline with its two ends swapped: `src` is the archive (read, then its rows removed) and
// `dst` the source (written); the registry stays on the archive server and the commit proofs on the source.
enum class Mode { archive, copy_only, purge, restore };

// The command that runs `mode`, as the registry records it ("archive", "copy-only", "purge").
inline const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::archive: return "archive";
    case Mode::copy_only: return "copy-only";
    case Mode::purge: return "purge";
    case Mode::restore: return "restore";
  }
  return "?";
}

class CommitProof;
class DefinitionGuard;

// What the pipeline asks its owner at every batch boundary and before every commit.
struct Hooks {
  std::function<void()> before_commit;               // throws when a lock set is lost
  std::function<bool(const char* phase)> boundary;   // false: stop cleanly now (signal, max-runtime, ...)
  std::function<void(const char* phase)> gate;       // replication gate and throttle; may block
  std::function<void(const Stats&, const char* phase)> progress;
};

struct Context {
  Mode mode;
  const config::Job& job;
  std::vector<TableMeta> tables;  // by node index; 0 is the root
  std::vector<int> copy_order;    // parent-first
  std::vector<int> delete_order;  // child-first
  db::Connection& src;
  db::Connection& dst;
  const tracking::Registry& registry;
  unsigned long long job_id = 0, run_id = 0;
  std::string scope;  // the claim scope: source server, database, root table
  Hooks hooks;
  Stats stats;
  // The destination connection the remover records its decision on (its move to deleting), beside the main
  // thread's transaction on `dst`; `dst` itself where nothing runs beside it.
  db::Connection* marks = nullptr;
  // The source connection the plain reads of the next batch run on, beside the delete of the one before on
  // `src` (pipelined loop); `src` itself where nothing runs beside it.
  db::Connection* reads = nullptr;
  // The proof that a delete committed (commit_proof.h); owned by the Engine, never null while it runs.
  CommitProof* proof = nullptr;
  // The source tables' definitions at the run's start, checked by every delete transaction (definitions.h);
  // null: not checked (copy-only, dry-run).
  DefinitionGuard* definitions = nullptr;
  // The roots the next batch reads, under `lock_time` (batch_sizer.h); owned by the Engine, null in dry-run's SQL.
  BatchSizer* sizer = nullptr;
  // Some relation has no foreign key in the database: the delete's locked reads take gap locks.
  bool gap_locks = false;
  // Hashes of roots no batch may take (open conflicts). Written on the main thread, read by the source worker.
  class RootSet {
  public:
    RootSet() = default;
    RootSet(RootSet&& other) noexcept : m_set(std::move(other.m_set)) {}
    void insert(const std::string& hash) {
      std::lock_guard<std::mutex> g(m_mutex);
      m_set.insert(hash);
    }
    std::set<std::string> copy() const {
      std::lock_guard<std::mutex> g(m_mutex);
      return m_set;
    }

  private:
    mutable std::mutex m_mutex;
    std::set<std::string> m_set;
  } skip_roots;
  // The source data session checks foreign keys (@@foreign_key_checks): a guarded tree's one-pass delete
  // relies on them (returning_delete.h).
  bool source_fk_checks = false;
  // restore --keep-archive: the rows go back into the source and stay in the archive too.
  bool keep_archive = false;
  // A condition the keyset read of new roots adds to `where`: the rows of partitions the partition path left in
  // the table for a later run (partition_path.h); "" for none.
  std::string row_exclusion{};

  // The index each statement by key names (FORCE INDEX), per server and table, read once (key_index.h).
  mutable KeyIndexes indexes{};
  // Whether a batch's rows leave `src` once they are copied and verified (archive, purge, and restore without
  // --keep-archive); copy-only and restore --keep-archive leave them where they are.
  bool removes_from_src() const { return mode != Mode::copy_only && !keep_archive; }
  bool copies() const { return mode != Mode::purge; }
  bool sha256() const { return job.processing.verification == config::VerifyMethod::sha256; }
  const TableMeta& root() const { return tables[0]; }
  // The roots the next batch reads: batch_size, or fewer under lock_time.
  size_t batch_roots() const {
    const auto n = static_cast<size_t>(job.processing.batch_size);
    return sizer ? sizer->roots(n) : n;
  }
  db::Connection& read_conn() const { return reads ? *reads : src; }
  // The session on the archive server, where the registry lives: `dst`, or `src` when the ends are swapped.
  db::Connection& reg() const { return mode == Mode::restore ? src : dst; }
  // The data session on the source server, where the commit proofs live: `src`, or `dst` when the ends are swapped.
  db::Connection& production() const { return mode == Mode::restore ? dst : src; }
  bool restores() const { return mode == Mode::restore; }
  // The registry session the main thread reads per-root marks on: restore's `marks` (its `src` may be busy with a
  // removal on the worker), else reg().
  db::Connection& marks_reads() const { return restores() && marks ? *marks : reg(); }
};

}  // namespace goarchive::pipeline

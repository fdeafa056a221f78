#pragma once
// The batch pipeline of DESIGN.md §5 as one object for its owner (the run, dry-run): it builds the parts
// (tree reader, source reader, destination writer, remover, batch log, stages, recovery, loop) around one
// Context and runs recovery, then the loop. ARCHITECTURE.md draws the parts and the life of a batch.
#include <memory>
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/batch_log.h"
#include "pipeline/commit_proof.h"
#include "pipeline/context.h"
#include "pipeline/copy_sweep.h"
#include "pipeline/definitions.h"
#include "pipeline/destination_writer.h"
#include "pipeline/loop.h"
#include "pipeline/partition_path.h"
#include "pipeline/recovery.h"
#include "pipeline/remover.h"
#include "pipeline/restore.h"
#include "pipeline/source_reader.h"
#include "pipeline/stages.h"
#include "pipeline/stats.h"
#include "pipeline/table_meta.h"
#include "pipeline/tree_reader.h"

namespace goarchive::pipeline {

class Engine {
public:
  Engine(Mode mode, const config::Job& job, std::vector<TableMeta> tables, db::Connection& source,
         db::Connection& destination, const tracking::Registry& registry, unsigned long long job_id,
         unsigned long long run_id, std::string scope, Hooks hooks);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Finishes the job's unfinished roots, then archives batch after batch until nothing is left or a hook
  // says stop. Returns false when it stopped early.
  bool run();
  const Stats& stats() const { return m_ctx.stats; }
  // The destination connection the source delete records its decision on (archive's pipelined loop).
  void set_marks_connection(db::Connection& conn) { m_ctx.marks = &conn; }
  // The source connection the next batch's plain read runs on, beside the delete (archive and purge's
  // pipelined loop); it must be set up as the source data session is.
  void set_reads_connection(db::Connection& conn) { m_ctx.reads = &conn; }
  // archive: the source database whose goarchive_commits table proves each delete's commit (commit_proof.h).
  void use_commit_proofs(std::string source_db) { m_proof_db = std::move(source_db); }
  // The source definitions every source delete transaction checks (definitions.h); it outlives the engine.
  void guard_definitions(DefinitionGuard& guard) { m_ctx.definitions = &guard; }
  // restore --keep-archive: the archived rows stay where they are once they are back in the source.
  void keep_archive() { m_ctx.keep_archive = true; }
  // Continues counting from an earlier engine of the same run (after a retry).
  void carry_over(const Stats& stats) { m_ctx.stats = stats; }

  // The statements a batch sends, as they run with placeholders for the values, for dry-run.
  std::vector<std::string> sample_sql() const;
  // Which partitions of the root table would leave whole and which rows go the row path, and why (dry-run,
  // validate): reads the source, never changes it. Empty when the root table is not partitioned.
  std::vector<PartitionChoice> partition_plan() const;

private:
  Context m_ctx;
  BatchSizer m_sizer;
  CommitProof m_proof;
  std::string m_proof_db;
  TreeReader m_tree;
  SourceReader m_reader;
  DestinationWriter m_writer;
  BatchLog m_log;
  Remover m_remover;
  Stages m_stages;
  Recovery m_recovery;
  CopySweep m_sweep;
  Loop m_loop;
  Restore m_restore;
  PartitionPath m_partitions;
  unsigned m_batch_no = 0;
};

}  // namespace goarchive::pipeline

#include "pipeline/engine.h"

namespace goarchive::pipeline {

namespace {

Context make_context(Mode mode, const config::Job& job, std::vector<TableMeta> tables, db::Connection& source,
                     db::Connection& destination, const tracking::Registry& registry, unsigned long long job_id,
                     unsigned long long run_id, std::string scope, Hooks hooks) {
  plan::Tree tree(job);
  Context ctx{mode, job, std::move(tables), tree.copy_order(), tree.delete_order(), source, destination, registry,
              job_id, run_id, std::move(scope), std::move(hooks), Stats{},
              nullptr, nullptr, nullptr, nullptr, nullptr, false, {}};
  for (const auto& t : ctx.tables) {
    ctx.stats.tables.push_back(TableStats{t.node.table, 0, 0, 0, 0});
    for (const auto& e : t.edges) ctx.gap_locks = ctx.gap_locks || e.config_only;
  }
  return ctx;
}

}  // namespace

Engine::Engine(Mode mode, const config::Job& job, std::vector<TableMeta> tables, db::Connection& source,
               db::Connection& destination, const tracking::Registry& registry, unsigned long long job_id,
               unsigned long long run_id, std::string scope, Hooks hooks)
    : m_ctx(make_context(mode, job, std::move(tables), source, destination, registry, job_id, run_id,
                         std::move(scope), std::move(hooks))),
      m_sizer(job.processing.lock_time), m_proof(m_ctx), m_tree(m_ctx), m_reader(m_ctx, m_tree), m_writer(m_ctx, m_tree), m_log(m_ctx), m_remover(m_ctx, m_tree, m_log),
      m_stages(m_ctx, m_tree, m_reader, m_writer, m_remover, m_log), m_recovery(m_ctx, m_log, m_stages),
      m_sweep(m_ctx, m_tree, m_writer),
      m_loop(m_ctx, m_reader, m_stages), m_restore(m_ctx, m_tree, m_reader, m_writer, m_remover, m_log),
      m_partitions(m_ctx) {
  m_ctx.proof = &m_proof;
  m_ctx.sizer = &m_sizer;
  // Unknown (the query failed) counts as off: every batch then takes the locked re-read.
  try {
    m_ctx.source_fk_checks = source.scalar("SELECT @@foreign_key_checks").value_or("0") == "1";
  } catch (const db::DbError&) {
    m_ctx.source_fk_checks = false;
  }
}

std::vector<PartitionChoice> Engine::partition_plan() const {
  if (m_ctx.restores()) return {};  // the source is written, never detached
  return plan_partitions(m_ctx, m_ctx.src);
}

bool Engine::run() {
  m_proof.start(m_proof_db);
  if (m_ctx.restores()) {
    m_partitions.run();  // refuses an archive's or a purge's unfinished partition step: only they may finish it
    bool completed = m_restore.run(m_batch_no);
    m_proof.flush();
    return completed;
  }
  m_stages.start();
  m_recovery.review_conflicts(m_tree);
  bool completed = m_recovery.run(m_batch_no) && m_sweep.run() && m_partitions.run();
  if (completed) {
    m_ctx.row_exclusion = m_partitions.exclusion();
    m_stages.start();  // the sweep may have forgotten marks
    completed = m_loop.run(m_batch_no);
  }
  m_proof.flush();
  return completed;
}

}  // namespace goarchive::pipeline

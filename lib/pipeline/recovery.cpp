#include "pipeline/recovery.h"

#include <spdlog/spdlog.h>

namespace goarchive::pipeline {

bool Recovery::run(unsigned& batch_no) {
  auto counts = m_ctx.registry.unfinished_counts(m_ctx.dst, m_ctx.job_id);
  if (counts.first + counts.second == 0) return true;
  spdlog::info("recovery start: {} root(s) copied, {} root(s) deleting", counts.first, counts.second);
  unsigned long long after = 0;
  while (true) {
    if (!m_ctx.hooks.boundary("recovery")) return false;
    auto rows = m_ctx.registry.unfinished_batches(m_ctx.dst, m_ctx.job_id, after, 16);
    if (rows.empty()) break;
    for (const auto& row : rows) {
      after = row.id;
      Batch batch;
      batch.no = ++batch_no;
      batch.id = row.id;
      batch.recovery = true;
      for (const auto& enc : row.root_keys) batch.add_root(tracking::decode_key(enc));
      m_log.adopt(batch, row.version);
      m_stages.process(batch);
      m_ctx.stats.recovered += batch.roots.size();
      if (!m_ctx.hooks.boundary("recovery")) return false;
    }
  }
  spdlog::info("recovery done: {} root(s) finished", m_ctx.stats.recovered);
  return true;
}

}  // namespace goarchive::pipeline

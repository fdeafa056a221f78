#include "pipeline/recovery.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/commit_proof.h"
#include "pipeline/rows.h"
#include "util/fault.h"

namespace goarchive::pipeline {

bool Recovery::any_row_on(Side side, const Batch& from, int root) const {
  db::Connection& conn = side == Side::source ? m_ctx.src : m_ctx.dst;
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    const std::string& name = side == Side::source ? m.source_name : m.destination_name;
    // A key-only read: through a join on the key's index, which no statistics turn into a scan (key_index.h).
    const auto keys = primary_keys(m, from.tables[t].rows, from.tables[t].rows_of(root));
    for (const auto& join : m_ctx.indexes.joins(conn, name, m.key_cols, keys)) {
      if (conn.scalar("SELECT 1 FROM " + join + " LIMIT 1")) return true;
    }
  }
  return false;
}

void Recovery::review_conflicts(const TreeReader& tree) {
  if (m_ctx.mode != Mode::archive && m_ctx.mode != Mode::copy_only) return;
  auto keys = m_ctx.registry.conflicts(m_ctx.reg(), m_ctx.job_id);
  if (keys.empty()) return;
  Batch source, archive;
  for (const auto& enc : keys) {
    source.add_root(tracking::decode_key(enc));
    archive.add_root(tracking::decode_key(enc));
  }
  source.tables.resize(m_ctx.tables.size());
  archive.tables.resize(m_ctx.tables.size());
  tree.read_roots(m_ctx.src, Side::source, source, Read::plain);
  tree.read_children(m_ctx.src, Side::source, source, Read::plain);
  tree.read_roots(m_ctx.dst, Side::destination, archive, Read::plain);
  tree.read_children(m_ctx.dst, Side::destination, archive, Read::plain);
  std::vector<std::string> resolved;
  for (size_t i = 0; i < keys.size(); ++i) {
    int r = static_cast<int>(i);
    // One version left: the root is on one side only and no row of its tree is on the other side under another
    // root (a re-keyed root leaves its rows on both sides under two keys).
    bool in_source = !source.tables[0].rows_of(r).empty(), in_archive = !archive.tables[0].rows_of(r).empty();
    bool one_side = in_source != in_archive &&
                    !any_row_on(in_source ? Side::destination : Side::source, in_source ? source : archive, r);
    bool gone = !in_source && !in_archive;
    if (gone || one_side || (in_source && in_archive && same_tree(source, archive, r))) {
      resolved.push_back(source.roots[i].hash);
      continue;
    }
    m_ctx.skip_roots.insert(source.roots[i].hash);
    m_ctx.stats.add_conflict(name_key(m_ctx.root(), source.root_keys[i]));
  }
  if (!resolved.empty()) {
    m_ctx.registry.resolve_conflicts(m_ctx.reg(), m_ctx.job_id, resolved);
    spdlog::info("{} conflict(s) resolved: each root now has one version", resolved.size());
  }
}

void Recovery::prove(Batch& batch) const {
  if (!m_ctx.proof->available()) return;
  batch.proof = m_ctx.registry.proof(m_ctx.reg(), batch.id);
  if (batch.proof.empty()) return;  // decided before proofs (or on an unproven copy): versions are compared
  batch.unproven = false;
  batch.delete_committed = m_ctx.proof->committed(batch.proof);
  spdlog::info("batch {}: the interrupted delete {} (its commit proof is {} the source)", batch.no,
               batch.delete_committed ? "committed" : "rolled back", batch.delete_committed ? "in" : "not in");
}

std::pair<unsigned long long, unsigned long long> unfinished_work(const Context& ctx) {
  auto counts = ctx.registry.unfinished_counts(ctx.reg(), ctx.job_id);
  if (counts.first + counts.second == 0) return counts;
  // A batch is finished by the rules of the mode that wrote it: copy-only would take an archive batch whose delete
  // committed for one to undo, and remove the only copy of its rows; archive would compare a purge batch's roots
  // with copies that were never made; restore and archive move rows in opposite directions.
  for (const auto& command : ctx.registry.unfinished_commands(ctx.reg(), ctx.job_id)) {
    if (command == mode_name(ctx.mode)) continue;
    throw Error(fmt::format("job {} has unfinished {} work ({} root(s) copied, {} deleting) that only {} may finish; "
                            "run `goarchive {} -j {}` first, then this command again",
                            ctx.job.name, command, counts.first, counts.second, command, command, ctx.job.name));
  }
  return counts;
}

bool adopt_unfinished(const Context& ctx, const BatchLog& log, unsigned& batch_no,
                      const std::function<void(Batch& batch, const tracking::BatchRow& row)>& each) {
  unsigned long long after = 0;
  while (true) {
    if (!ctx.hooks.boundary("recovery")) return false;
    auto rows = ctx.registry.unfinished_batches(ctx.reg(), ctx.job_id, after, 16);
    if (rows.empty()) return true;
    for (const auto& row : rows) {
      after = row.id;
      Batch batch;
      batch.no = ++batch_no;
      batch.id = row.id;
      batch.recovery = true;
      for (const auto& enc : row.root_keys) batch.add_root(tracking::decode_key(enc));
      log.adopt(batch, row.version);
      each(batch, row);
    }
  }
}

bool Recovery::run(unsigned& batch_no) {
  auto counts = unfinished_work(m_ctx);
  if (counts.first + counts.second == 0) return true;
  spdlog::info("recovery start: {} root(s) copied, {} root(s) deleting", counts.first, counts.second);
  // Every unfinished batch is adopted, and proven when deleting, before any is taken further; the copies of
  // those whose source delete never committed are then removed, all of them before any is copied again. A child
  // the application moved from a root of one such batch to a root of another after they were copied is then
  // copied once, under its current root, instead of meeting the other batch's copy as a conflict.
  std::vector<Batch> batches;
  const bool adopted = adopt_unfinished(m_ctx, m_log, batch_no, [&](Batch& batch, const tracking::BatchRow& row) {
    batch.unproven = m_ctx.mode == Mode::archive && row.state == "deleting";
    if (batch.unproven) prove(batch);
    batches.push_back(std::move(batch));
  });
  if (!adopted) return false;
  fault::point("recovery_adopted");
  for (Batch& batch : batches) {
    if (!batch.unproven && !batch.delete_committed) m_stages.remove_copy(batch);
  }
  for (Batch& batch : batches) {
    if (!m_ctx.hooks.boundary("recovery")) return false;
    m_stages.process(batch);
    m_ctx.stats.recovered += batch.roots.size();
  }
  spdlog::info("recovery done: {} root(s) finished", m_ctx.stats.recovered);
  return true;
}

}  // namespace goarchive::pipeline

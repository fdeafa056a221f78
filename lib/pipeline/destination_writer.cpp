#include "pipeline/destination_writer.h"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/rows.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

std::vector<size_t> all_rows(const TableRows& tb) {
  std::vector<size_t> rows(tb.size());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = r;
  return rows;
}

}  // namespace

void DestinationWriter::prebuild(Batch& batch) const {
  if (batch.prebuilt) return;
  const size_t budget = statement_budget(m_ctx.dst);
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    TableRows& tb = batch.tables[t];
    if (m_ctx.sha256()) {
      tb.digest.clear();
      tb.digest.reserve(tb.size());
      for (size_t r = 0; r < tb.size(); ++r) tb.digest.push_back(row_digest(tb.rows, r));
    }
    std::vector<size_t> rows = all_rows(tb);
    if (m_ctx.copies()) tb.inserts = build_inserts(batch, t, rows);
    tb.key_lists = primary_key_lists(m_ctx.tables[t], tb.rows, rows, budget);
  }
  batch.prebuilt = true;
}

std::vector<Statement> DestinationWriter::build_inserts(const Batch& batch, size_t t,
                                                        const std::vector<size_t>& rows) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  std::vector<Statement> out;
  const std::string head = fmt::format("INSERT INTO {} ({}) VALUES ", m.destination_name, m.select_list);
  const size_t budget = statement_budget(m_ctx.dst);
  const size_t limit = m_ctx.dst.max_allowed_packet();
  for (size_t r : rows) {
    std::string values = "(";
    for (size_t c = 0; c < m.columns.size(); ++c) {
      if (c) values += ',';
      values += sql::literal(tb.rows.get(r, c), m.binary[c]);
    }
    values += ')';
    if (head.size() + values.size() + 256 > limit) {
      throw Error(fmt::format("the row {} is {} bytes as SQL text, more than the destination's max_allowed_packet "
                              "({} bytes); nothing of this batch was copied. Raise max_allowed_packet on the "
                              "destination (SET GLOBAL max_allowed_packet = ...)",
                              name_row(m, tb.rows, r), values.size(), limit));
    }
    if (out.empty() || out.back().sql.size() + values.size() + 1 > budget) {
      out.push_back(Statement{head, {}});
      out.back().sql.reserve(std::min<size_t>(budget + 4096, 1 << 20));
    } else {
      out.back().sql += ',';
    }
    out.back().sql += values;
    out.back().rows.push_back(r);
  }
  return out;
}

void DestinationWriter::run_inserts(Batch& batch, size_t t, const std::vector<Statement>& statements) {
  for (const auto& st : statements) {
    try {
      m_ctx.dst.execute(st.sql);
      batch.copied[t] += st.rows.size();
    } catch (const db::DbError& e) {
      // A duplicate key is an answer (seed 000, I4): the row is already archived; check it is the same row.
      if (!e.duplicate_key()) throw;
      insert_fallback(batch, t, st.rows);
    }
  }
}

void DestinationWriter::insert_fallback(Batch& batch, size_t t, const std::vector<size_t>& rows) {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  db::RowSet existing;
  existing.set_columns(m.columns);
  for (const auto& list : primary_key_lists(m, tb.rows, rows, statement_budget(m_ctx.dst))) {
    db::RowSet part = m_ctx.dst.query(fmt::format("SELECT {} FROM {} WHERE {}", m.select_list, m.destination_name, list));
    for (size_t r = 0; r < part.rows(); ++r) append_row(existing, part, r);
  }
  std::map<std::string, size_t> there;
  for (size_t r = 0; r < existing.rows(); ++r) there[encode_values(existing, r, m.key_idx)] = r;
  std::vector<size_t> missing;
  bool removed_stale = false;
  for (size_t r : rows) {
    auto it = there.find(tb.key[r]);
    if (it == there.end()) {
      missing.push_back(r);
      continue;
    }
    if (!same_row(existing, it->second, tb.rows, r)) {
      if (remove_stale_copy_of(t, existing, it->second)) {
        removed_stale = true;
        missing.push_back(r);  // its stale copy is gone: insert the current version
        continue;
      }
      throw RowConflict(fmt::format("the row {} is already in the destination with different content; goarchive "
                                    "never overwrites an archived row",
                                    name_row(m, tb.rows, r)),
                        tb.root[r]);
    }
    ++m_ctx.stats.tables[t].skipped_existing;
  }
  if (missing.size() == rows.size() && !removed_stale) {
    throw Error(fmt::format("table {}: INSERT reported a duplicate key but none of its rows is in the destination; "
                            "a unique key other than the primary key conflicts. Check the destination's unique keys",
                            m.node.table));
  }
  if (!missing.empty()) run_inserts(batch, t, build_inserts(batch, t, missing));
}

std::optional<std::vector<std::string>> DestinationWriter::destination_root_of(size_t t, const db::RowSet& rows,
                                                                              size_t r) const {
  db::RowSet row = rows;
  size_t at = r;
  while (t != 0) {
    const TableMeta& m = m_ctx.tables[t];
    const TableMeta& pm = m_ctx.tables[static_cast<size_t>(m.node.parent)];
    if (any_null(row, at, m.fk_idx)) return std::nullopt;
    std::string cond;
    for (size_t k = 0; k < m.fk_idx.size(); ++k) {
      cond += (k ? " AND " : "") + sql::ident(pm.columns[m.parent_ref_idx[k]]) + " = " +
              sql::literal(row.get(at, m.fk_idx[k]), m.fk_binary[k]);
    }
    row = m_ctx.dst.query(fmt::format("SELECT {} FROM {} WHERE {} LIMIT 1", pm.select_list, pm.destination_name, cond));
    if (row.rows() == 0) return std::nullopt;
    at = 0;
    t = static_cast<size_t>(m.node.parent);
  }
  std::vector<std::string> key;
  for (size_t i : m_ctx.root().key_idx) key.push_back(row.cell(at, i));
  return key;
}

bool DestinationWriter::remove_stale_copy_of(size_t t, const db::RowSet& rows, size_t r) {
  if (m_ctx.mode == Mode::purge) return false;
  auto root = destination_root_of(t, rows, r);
  if (!root) return false;
  tracking::RootKey rk = tracking::encode_key(*root);
  if (m_ctx.registry.marked(m_ctx.dst, m_ctx.job_id, {rk.hash}, "copied").empty()) return false;
  Batch stale;
  stale.add_root(*root);
  remove_tree_copies(stale, {0});
  m_ctx.registry.unmark(m_ctx.dst, m_ctx.job_id, {rk.hash});
  spdlog::info("the copy-only copy of root {} went stale (a row of it now belongs to another root) and was removed",
               name_key(m_ctx.root(), *root));
  return true;
}

void DestinationWriter::copy(Batch& batch) {
  batch.copied.assign(m_ctx.tables.size(), 0);
  for (int ni : m_ctx.copy_order) {
    run_inserts(batch, static_cast<size_t>(ni), batch.tables[static_cast<size_t>(ni)].inserts);
  }
}

// Reads the batch back inside the copy transaction (its own writes) and compares it with the source: a batch
// that fails verification rolls back whole, so nothing unverified is ever marked for deletion.
void DestinationWriter::verify(Batch& batch) {
  batch.verified.assign(m_ctx.tables.size(), 0);
  if (m_ctx.job.processing.verification == config::VerifyMethod::none) return;
  auto t0 = std::chrono::steady_clock::now();
  for (int ni : m_ctx.copy_order) {
    const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
    const TableRows& tb = batch.tables[static_cast<size_t>(ni)];
    size_t found = 0;
    for (const std::string& where : tb.key_lists) {
      if (!m_ctx.sha256()) {
        found += std::stoull(
            m_ctx.dst.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE {}", m.destination_name, where)).value_or("0"));
        continue;
      }
      db::RowSet there =
          m_ctx.dst.query(fmt::format("SELECT {} FROM {} WHERE {}", m.select_list, m.destination_name, where));
      for (size_t r = 0; r < there.rows(); ++r) {
        auto at = tb.find(encode_values(there, r, m.key_idx));
        if (!at) continue;
        if (row_digest(there, r) != tb.digest[*at]) {
          throw Error(fmt::format("verification (sha256) failed: the destination row {} differs from the source; "
                                  "nothing was deleted. Inspect both rows; the rerun resumes this batch",
                                  name_row(m, there, r)));
        }
        ++found;
      }
    }
    if (found != tb.size()) {
      throw Error(fmt::format("verification ({}) failed for table {}: {} rows copied but {} found in the destination; "
                              "nothing was deleted. The rerun resumes this batch",
                              config::to_string(m_ctx.job.processing.verification), m.node.table, tb.size(), found));
    }
    batch.verified[static_cast<size_t>(ni)] += found;
  }
  m_ctx.stats.t_verify += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t DestinationWriter::delete_by_key(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which) {
  size_t removed = 0;
  for (const auto& list : primary_key_lists(m, rows, which, statement_budget(m_ctx.dst))) {
    removed += m_ctx.dst.execute(fmt::format("DELETE FROM {} WHERE {}", m.destination_name, list));
  }
  return removed;
}

size_t DestinationWriter::remove_copied_rows(const Batch& batch, const std::vector<int>& roots) {
  if (roots.empty()) return 0;
  size_t removed = 0;
  for (int ni : m_ctx.delete_order) {
    const TableRows& tb = batch.tables[static_cast<size_t>(ni)];
    std::vector<size_t> rows;
    for (int r : roots) {
      auto mine = tb.rows_of(r);
      rows.insert(rows.end(), mine.begin(), mine.end());
    }
    removed += delete_by_key(m_ctx.tables[static_cast<size_t>(ni)], tb.rows, rows);
  }
  spdlog::info("batch {}: removed the archived copy of {} root(s) left in the source ({} rows)", batch.no,
               roots.size(), removed);
  return removed;
}

size_t DestinationWriter::remove_tree_copies(const Batch& batch, const std::vector<int>& roots) {
  if (roots.empty()) return 0;
  Batch old;
  old.tables.resize(m_ctx.tables.size());
  for (int r : roots) old.add_root(batch.root_keys[static_cast<size_t>(r)]);
  m_tree.read_roots(m_ctx.dst, Side::destination, old, Read::plain);
  m_tree.read_children(m_ctx.dst, Side::destination, old, Read::plain);
  size_t removed = 0;
  for (int ni : m_ctx.delete_order) {
    const TableRows& tb = old.tables[static_cast<size_t>(ni)];
    removed += delete_by_key(m_ctx.tables[static_cast<size_t>(ni)], tb.rows, all_rows(tb));
  }
  spdlog::info("batch {}: removed the earlier destination copy of {} root(s) ({} rows)", batch.no, roots.size(),
               removed);
  return removed;
}

}  // namespace goarchive::pipeline

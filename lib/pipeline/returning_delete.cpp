#include "pipeline/returning_delete.h"

#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/holds.h"
#include "pipeline/rows.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

// The foreign key of the source database behind the relation of `m` to its parent, if it restricts deletes.
bool restricting_foreign_key(const TableMeta& m, const TableMeta& parent) {
  for (const auto& fk : m.source.references) {
    if (ascii_lower(fk.ref_table) != ascii_lower(parent.source.name) || fk.columns.size() != m.node.foreign_key.size()) {
      continue;
    }
    bool same = true;
    for (size_t k = 0; k < fk.columns.size() && same; ++k) {
      same = ascii_lower(fk.columns[k]) == ascii_lower(m.node.foreign_key[k]);
    }
    if (same) return fk.restricts();
  }
  return false;
}

// The server says a row still references one being deleted (RESTRICT / NO ACTION).
bool still_referenced(const db::DbError& e) { return e.code() == 1451 || e.code() == 1217; }

}  // namespace

bool ReturningDelete::applies() const {
  // DELETE ... RETURNING: MariaDB 10.0.5 and later.
  if (m_ctx.mode != Mode::archive || !m_ctx.src.info().mariadb || m_ctx.src.info().version_number < 100005 ||
      m_refused.load() || m_ctx.gap_locks || Holds(m_ctx).any()) {
    return false;
  }
  for (size_t t = 1; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    if (m.node.parent < 0 || m.edges.size() != 1 || m.config_only || m.collated_fk ||
        !restricting_foreign_key(m, m_ctx.tables[static_cast<size_t>(m.node.parent)])) {
      return false;
    }
  }
  return true;
}

bool ReturningDelete::applies(const Batch& batch) const {
  if (!applies() || batch.recovery || batch.unproven || batch.id == 0 || batch.roots.empty()) return false;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (batch.stays(i)) return false;
  }
  if (m_ctx.tables.size() > 1 && m_fk_checks.load() < 0) {
    auto v = m_ctx.src.scalar("SELECT @@foreign_key_checks");
    m_fk_checks = v && *v == "1" ? 1 : 0;
    if (!m_fk_checks.load()) {
      spdlog::info("the source session does not check foreign keys (foreign_key_checks = 0): every batch is deleted "
                   "after a locked re-read");
    }
  }
  return m_ctx.tables.size() == 1 || m_fk_checks.load() == 1;
}

std::vector<std::string> ReturningDelete::root_conditions(const Batch& batch) const {
  const TableMeta& m = m_ctx.root();
  const TableRows& tb = batch.tables[0];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  std::vector<size_t> all(tb.size()), rest;
  for (size_t r = 0; r < all.size(); ++r) all[r] = r;
  std::vector<std::string> out;
  const std::string order = sql::ident_list(m.key_cols);
  for (const auto& range : key_ranges(m, tb.rows, all, per_statement, rest)) {
    out.push_back(fmt::format("({}) AND ({}) ORDER BY {} LIMIT {}", range.where, m_ctx.job.where, order, range.count));
  }
  std::vector<sql::KeyLiterals> keys;
  for (size_t r : rest) keys.push_back(literals(tb.rows, r, m.key_idx, m.key_binary, m.key_integer));
  for (auto& list : key_lists(m.key_cols, keys, statement_budget(m_ctx.src), "", per_statement)) {
    out.push_back(fmt::format("({}) AND ({})", list, m_ctx.job.where));
  }
  return out;
}

std::vector<std::string> ReturningDelete::child_conditions(const Batch& batch, int ni) const {
  const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
  const TableRows& tb = batch.tables[static_cast<size_t>(ni)];
  const TableRows& parent = batch.tables[static_cast<size_t>(m.node.parent)];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  const size_t budget = statement_budget(m_ctx.src);
  std::unordered_map<std::string, size_t> children;  // encoded foreign-key value -> copied rows with it
  for (size_t r = 0; r < tb.size(); ++r) {
    if (!any_null(tb.rows, r, m.fk_idx)) ++children[encode_values(tb.rows, r, m.fk_idx)];
  }
  std::vector<std::string> out;
  std::vector<sql::KeyLiterals> chunk;
  size_t rows = 0, bytes = 0;
  auto flush = [&] {
    if (!chunk.empty()) out.push_back(sql::key_in(m.node.foreign_key, chunk));
    chunk.clear();
    rows = bytes = 0;
  };
  std::set<std::string> seen;
  for (size_t r = 0; r < parent.size(); ++r) {
    if (any_null(parent.rows, r, m.parent_ref_idx)) continue;
    std::string v = encode_values(parent.rows, r, m.parent_ref_idx);
    if (!seen.insert(v).second) continue;
    sql::KeyLiterals lit = literals(parent.rows, r, m.parent_ref_idx, m.fk_binary, m.fk_integer);
    size_t size = 8;
    for (const auto& x : lit) size += x.size() + 2;
    auto kids = children.find(v);
    const size_t n = kids == children.end() ? 0 : kids->second;
    if (!chunk.empty() && (rows + n > per_statement || bytes + size > budget)) flush();
    chunk.push_back(std::move(lit));
    rows += n;
    bytes += size;
  }
  flush();
  return out;
}

bool ReturningDelete::same_rows(const Batch& batch, int ni, const db::RowSet& got, std::string& why) const {
  const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
  const TableRows& copied = batch.tables[static_cast<size_t>(ni)];
  std::vector<bool> seen(copied.size(), false);
  for (size_t r = 0; r < got.rows(); ++r) {
    auto at = copied.find(encode_values(got, r, m.key_idx));
    if (!at || seen[*at]) {
      why = name_row(m, got, r) + (ni == 0 ? " matched a key of the batch but is not a row that was copied"
                                            : " is under a parent row of the batch but was not copied");
      return false;
    }
    seen[*at] = true;
    if (!same_row(copied.rows, *at, got, r)) {
      why = name_row(m, copied.rows, *at) + " changed";
      return false;
    }
  }
  if (got.rows() == copied.size()) return true;
  for (size_t r = 0; r < copied.size(); ++r) {
    if (!seen[r]) {
      why = name_row(m, copied.rows, r) + (ni == 0 ? " is gone or no longer matches `where`"
                                                   : " is gone or no longer under its parent row");
      break;
    }
  }
  return false;
}

bool ReturningDelete::run(Batch& batch, std::string& why) const {
  for (int ni : m_ctx.delete_order) {
    const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
    db::RowSet got;
    got.set_columns(m.columns);
    const size_t ncols = m.columns.size();
    try {
      for (const auto& cond : ni == 0 ? root_conditions(batch) : child_conditions(batch, ni)) {
        m_ctx.src.stream(fmt::format("DELETE FROM {} WHERE {} RETURNING {}", m.source_name, cond, m.select_list),
                         [&](const char* const* cells, const unsigned long* lengths, size_t) {
                           for (size_t c = 0; c < ncols; ++c) got.push(cells[c], cells[c] ? lengths[c] : 0);
                         });
      }
    } catch (const db::DbError& e) {
      if (e.retryable() || e.connection_lost()) throw;
      if (still_referenced(e)) {
        why = fmt::format("a row of table {} is still referenced (a row was added under it)", m.node.table);
        return false;
      }
      m_refused = true;
      spdlog::info("the source refuses DELETE ... RETURNING for this job ({}); every batch is deleted after a "
                   "locked re-read",
                   e.what());
      why = "the source refused the statement";
      return false;
    }
    if (!same_rows(batch, ni, got, why)) return false;
    batch.deleted[static_cast<size_t>(ni)] += got.rows();
    fault::point("after_one_pass_table");
  }
  return true;
}

}  // namespace goarchive::pipeline

#include "pipeline/returning_delete.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/holds.h"
#include "pipeline/rows.h"

namespace goarchive::pipeline {

bool ReturningDelete::applies() const {
  // DELETE ... RETURNING: MariaDB 10.0.5 and later.
  return m_ctx.mode == Mode::archive && m_ctx.tables.size() == 1 && m_ctx.src.info().mariadb &&
         m_ctx.src.info().version_number >= 100005 && !m_refused.load() && !Holds(m_ctx).any();
}

bool ReturningDelete::applies(const Batch& batch) const {
  if (!applies() || batch.recovery || batch.unproven || batch.id == 0 || batch.roots.empty()) return false;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (batch.stays(i)) return false;
  }
  return true;
}

std::vector<std::string> ReturningDelete::conditions(const Batch& batch) const {
  const TableMeta& m = m_ctx.root();
  const TableRows& tb = batch.tables[0];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  std::vector<size_t> all(tb.size()), rest;
  for (size_t r = 0; r < all.size(); ++r) all[r] = r;
  std::vector<std::string> out;
  // `ORDER BY key LIMIT n`: the range stops at its n-th row while they all still match, so it never reads, let
  // alone waits for, the row after it.
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

bool ReturningDelete::run(Batch& batch, std::string& why) const {
  const TableMeta& m = m_ctx.root();
  const TableRows& copied = batch.tables[0];
  db::RowSet got;
  got.set_columns(m.columns);
  const size_t ncols = m.columns.size();
  try {
    for (const auto& cond : conditions(batch)) {
      m_ctx.src.stream(fmt::format("DELETE FROM {} WHERE {} RETURNING {}", m.source_name, cond, m.select_list),
                       [&](const char* const* cells, const unsigned long* lengths, size_t) {
                         for (size_t c = 0; c < ncols; ++c) got.push(cells[c], cells[c] ? lengths[c] : 0);
                       });
    }
  } catch (const db::DbError& e) {
    if (e.retryable() || e.connection_lost()) throw;
    m_refused = true;
    spdlog::info("the source refuses DELETE ... RETURNING for this job ({}); every batch is deleted after a locked "
                 "re-read",
                 e.what());
    why = "the source refused the statement";
    return false;
  }
  std::vector<bool> seen(copied.size(), false);
  for (size_t r = 0; r < got.rows(); ++r) {
    auto at = copied.find(encode_values(got, r, m.key_idx));
    if (!at || seen[*at]) {
      why = name_row(m, got, r) + " matched a key of the batch but is not a row that was copied";
      return false;
    }
    seen[*at] = true;
    if (!same_row(copied.rows, *at, got, r)) {
      why = name_row(m, copied.rows, *at) + " changed";
      return false;
    }
  }
  if (got.rows() != copied.size()) {
    for (size_t r = 0; r < copied.size(); ++r) {
      if (!seen[r]) {
        why = name_row(m, copied.rows, r) + " is gone or no longer matches `where`";
        break;
      }
    }
    return false;
  }
  batch.deleted[0] += got.rows();
  return true;
}

}  // namespace goarchive::pipeline

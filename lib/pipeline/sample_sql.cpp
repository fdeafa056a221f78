// Engine::sample_sql: the statements a batch sends, built by the same functions the pipeline uses, with `?`
// where a value goes, so that dry-run shows SQL that is valid apart from its placeholders and is what runs.
#include <algorithm>

#include <fmt/format.h>

#include "pipeline/engine.h"
#include "pipeline/returning_delete.h"
#include "pipeline/rows.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

// Two placeholder keys of `n` columns: enough to show the shape of a key list.
std::vector<sql::KeyLiterals> placeholders(size_t n) { return {sql::KeyLiterals(n, "?"), sql::KeyLiterals(n, "?")}; }

std::string key_list(const std::vector<std::string>& cols, const std::string& alias = "") {
  return sql::key_in(cols, placeholders(cols.size()), alias);
}

}  // namespace

std::vector<std::string> Engine::sample_sql() const {
  std::vector<std::string> out;
  const TableMeta& root = m_ctx.root();
  std::vector<std::string> last(root.key_cols.size(), "?");
  std::string keyset = m_tree.keyset_query(nullptr, root.select_list);
  std::string after = m_tree.keyset_query(&last, root.select_list);
  // keyset_query quotes the placeholder values; show them bare.
  std::string bare;
  for (size_t at = 0, pos; at < after.size(); at = pos + 3) {
    pos = after.find("'?'", at);
    bare.append(after, at, pos == std::string::npos ? std::string::npos : pos - at);
    if (pos == std::string::npos) break;
    bare += '?';
  }
  after = std::move(bare);
  out.push_back(fmt::format("-- select roots: the first batch (plain read, keyset on the primary key)\n{}", keyset));
  out.push_back(fmt::format("-- select roots: every later batch, after the last key of the one before\n{}", after));
  for (int ni : m_ctx.copy_order) {
    const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
    if (ni == 0) continue;
    const TableMeta& pm = m_ctx.tables[static_cast<size_t>(m.node.parent)];
    out.push_back(fmt::format("-- discover {} (children of {}, chunked lists of parent values)\nSELECT {} FROM {} "
                              "WHERE {}",
                              m.node.table, pm.node.table, m.select_list, m.source_name, key_list(m.node.foreign_key)));
  }
  if (m_ctx.copies()) {
    for (int ni : m_ctx.copy_order) {
      const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
      std::string row = fmt::format("({})", join(std::vector<std::string>(m.columns.size(), "?"), ", "));
      out.push_back(fmt::format("-- copy {} (parent-first, multi-row)\nINSERT INTO {} ({}) VALUES {}, {}", m.node.table,
                                m.destination_name, m.insert_list, row, row));
      if (m_ctx.job.processing.verification == config::VerifyMethod::sha256) {
        out.push_back(fmt::format("-- verify {} (read back in the copy transaction, SHA-256 per row)\nSELECT {} FROM {} "
                                  "WHERE {}",
                                  m.node.table, m.select_list, m.destination_name, key_list(m.key_cols)));
      } else if (m_ctx.job.processing.verification == config::VerifyMethod::count) {
        out.push_back(fmt::format("-- verify {} (row count in the copy transaction)\nSELECT COUNT(*) FROM {} WHERE {}",
                                  m.node.table, m.destination_name, key_list(m.key_cols)));
      }
    }
  }
  if (m_ctx.restores() && !m_proof_db.empty()) {
    out.push_back(fmt::format("-- the commit proof, in the copy transaction into the source; the claim naming it is "
                              "committed on the archive's registry before this transaction commits\n"
                              "INSERT INTO {} (token, job, batch_id) VALUES (?, ?, 0)",
                              CommitProof::table_name(m_proof_db)));
  }
  if (m_ctx.removes_from_src()) {
    ReturningDelete returning(m_ctx);
    if (returning.applies()) {
      if (m_ctx.tables.size() > 1) {
        out.push_back(fmt::format("-- one pass (a tree its foreign keys guard): lock the roots, then delete child-first, "
                                  "each statement returning what it deleted\nSELECT {} FROM {} WHERE {} FOR UPDATE",
                                  sql::ident_list(root.key_cols), root.source_name, key_list(root.key_cols)));
        for (int ni : m_ctx.delete_order) {
          const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
          if (ni == 0) continue;
          out.push_back(fmt::format("DELETE FROM {} WHERE {} RETURNING {}", m.source_name, key_list(m.key_cols),
                                    m.select_list));
        }
      }
      const std::string by = returning.slow_key_lists()
                                 ? fmt::format("{} BETWEEN ? AND ? AND ({}) ORDER BY {} LIMIT ?",
                                               sql::ident(root.key_cols.front()), m_ctx.job.where,
                                               sql::ident_list(root.key_cols))
                                 : fmt::format("{} AND ({})", key_list(root.key_cols), m_ctx.job.where);
      out.push_back(fmt::format("-- delete the roots in one pass, returning what it deleted; unless every statement "
                                "returned exactly what was {},\n-- back to a savepoint before it and the locked "
                                "re-read below\nDELETE FROM {} WHERE {} RETURNING {}",
                                m_ctx.mode == Mode::purge ? "read" : "copied", root.source_name, by,
                                returning.returning_list(0)));
    }
    out.push_back(fmt::format("-- lock and re-read the roots before the delete\nSELECT {} FROM {} WHERE {} FOR UPDATE",
                              root.select_list, root.source_name, key_list(root.key_cols)));
    for (int ni : m_ctx.copy_order) {
      if (ni == 0) continue;
      const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
      out.push_back(fmt::format("-- lock and re-read {}\nSELECT {} FROM {} WHERE {} FOR UPDATE", m.node.table,
                                m.select_list, m.source_name, key_list(m.node.foreign_key)));
    }
    for (int ni : m_ctx.delete_order) {
      const TableMeta& m = m_ctx.tables[static_cast<size_t>(ni)];
      out.push_back(fmt::format("-- delete {} (child-first, by exact primary key, up to {} rows per statement)\n"
                                "DELETE FROM {} WHERE {}",
                                m.node.table, m_ctx.job.processing.delete_batch_size, m.source_name,
                                key_list(m.key_cols)));
      const bool integer_key = std::all_of(m.key_idx.begin(), m.key_idx.end(), [&](size_t i) { return m.integer[i]; });
      if (!m_ctx.gap_locks && integer_key) {
        std::string where;
        for (size_t k = 0; k + 1 < m.key_cols.size(); ++k) where += sql::ident(m.key_cols[k]) + " = ? AND ";
        out.push_back(fmt::format("-- or, when those keys are an unbroken run of whole numbers (one range that matches "
                                  "exactly them)\nDELETE FROM {} WHERE {}{} BETWEEN ? AND ? ORDER BY {} LIMIT ?",
                                  m.source_name, where, sql::ident(m.key_cols.back()), sql::ident_list(m.key_cols)));
      }
    }
    if (m_ctx.mode == Mode::archive && !m_proof_db.empty()) {
      out.push_back(fmt::format("-- the commit proof, in the same transaction (goarchive(1), THE PIPELINE)\n"
                                "INSERT INTO {} (token, job, batch_id) VALUES (?, ?, ?)",
                                CommitProof::table_name(m_proof_db)));
    }
  }
  return out;
}

}  // namespace goarchive::pipeline

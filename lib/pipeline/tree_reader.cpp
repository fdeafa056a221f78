#include "pipeline/tree_reader.h"

#include <unordered_map>

#include <fmt/format.h>

#include "pipeline/rows.h"

namespace goarchive::pipeline {

std::string TreeReader::root_condition() const {
  std::string cond = "(" + m_ctx.job.where + ")";
  if (!m_ctx.row_exclusion.empty()) cond += " AND " + m_ctx.row_exclusion;
  return cond;
}

std::string TreeReader::any_root_query() const {
  return fmt::format("SELECT EXISTS (SELECT 1 FROM {} WHERE {})", m_ctx.root().source_name, root_condition());
}

std::string TreeReader::keyset_query(const std::vector<std::string>* after, const std::string& columns) const {
  const TableMeta& root = m_ctx.root();
  std::string cond = root_condition();
  if (after) cond += " AND " + sql::keyset_after(root.key_cols, wrap(literals(*after, root.key_binary), root.key_wrap));
  std::string order;
  for (size_t k = 0; k < root.key_cols.size(); ++k) order += (k ? ", " : "") + sql::ident(root.key_cols[k]);
  // A plain, non-locking read (seed 000, I3): the application's writes are never blocked by it. FORCE INDEX
  // keeps the walk on the primary key: an index on the `where` column would otherwise make every batch sort
  // all remaining cold rows (pt-archiver forces the index for the same reason).
  bool on_primary = root.key_cols == root.source.primary_key;
  return fmt::format("SELECT {} FROM {}{} WHERE {} ORDER BY {} LIMIT {}", columns, root.source_name,
                     on_primary ? " FORCE INDEX (PRIMARY)" : "", cond, order, m_ctx.batch_roots());
}

void TreeReader::read_roots(db::Connection& conn, Side side, Batch& batch, Read read,
                            std::vector<bool>* matches) const {
  const TableMeta& root = m_ctx.root();
  TableRows& tb = batch.tables[0];
  tb = TableRows{};
  tb.rows.set_columns(root.columns);
  std::unordered_map<std::string, int> owner;
  owner.reserve(batch.root_keys.size());
  for (size_t i = 0; i < batch.root_keys.size(); ++i) owner[encode_values(batch.root_keys[i])] = static_cast<int>(i);
  const bool source = side == Side::source;
  const std::string& name = source ? root.source_name : root.destination_name;
  std::string columns = root.select_list;
  if (matches) columns += fmt::format(", (({}) IS TRUE)", m_ctx.job.where);
  const size_t ncols = root.columns.size();
  // By the key's index even on a small table, or one whose statistics say so, where the optimizer would rather
  // scan: a locked scan waits for every row the application holds, not only the batch's, and a plain one of a
  // freshly filled archive grows with it (key_index.h).
  const bool locked = read == Read::locked;
  const std::string from = name + m_ctx.indexes.hint(conn, name, root.key_cols);
  // An unbroken run of integer keys is one range, `ORDER BY key LIMIT n`: it matches exactly the batch's keys
  // and, locked, stops at its n-th row, so it locks no row but theirs while they are all there. (A root the
  // application deleted meanwhile makes it read on to the row after the range: at worst a wait for that row.)
  // Never locked at REPEATABLE READ, where a range would also lock the gaps.
  std::vector<std::string> lists;
  std::vector<size_t> rest;
  if (!locked || !m_ctx.gap_locks) {
    const std::string order = sql::ident_list(root.key_cols);
    for (const auto& range : key_ranges(root, batch.root_keys, batch.root_keys.size(), rest)) {
      lists.push_back(fmt::format("{} ORDER BY {} LIMIT {}", range.where, order, range.count));
    }
  } else {
    for (size_t i = 0; i < batch.root_keys.size(); ++i) rest.push_back(i);
  }
  std::vector<sql::KeyLiterals> keys;
  for (size_t i : rest) keys.push_back(wrap(literals(batch.root_keys[i], root.key_binary, root.key_integer), root.key_wrap));
  for (auto& list : key_lists(root.key_cols, keys, statement_budget(conn))) lists.push_back(std::move(list));
  for (const auto& list : lists) {
    conn.stream(fmt::format("SELECT {} FROM {} WHERE {}{}", columns, from, list, locked ? " FOR UPDATE" : ""),
                [&](const char* const* cells, const unsigned long* lengths, size_t) {
                  for (size_t c = 0; c < ncols; ++c) tb.rows.push(cells[c], cells[c] ? lengths[c] : 0);
                  if (matches) matches->push_back(cells[ncols] && cells[ncols][0] == '1');
                });
  }
  for (size_t r = 0; r < tb.size(); ++r) {
    std::string key = encode_values(tb.rows, r, root.key_idx);
    auto it = owner.find(key);
    tb.index(std::move(key), it == owner.end() ? -1 : it->second);
  }
}

void TreeReader::read_children(db::Connection& conn, Side side, Batch& batch, Read read) const {
  for (int ni : m_ctx.copy_order) {
    if (ni != 0) read_child(conn, side, batch, static_cast<size_t>(ni), read);
  }
}

void TreeReader::read_child(db::Connection& conn, Side side, Batch& batch, size_t t, Read read) const {
  const TableMeta& m = m_ctx.tables[t];
  TableRows& tb = batch.tables[t];
  tb = TableRows{};
  tb.rows.set_columns(m.columns);
  // A table with several parents (a diamond) is read through each of them; a row found twice is the same row
  // (union by primary key) and belongs to the root of the parent it was found through first (config order).
  for (const EdgeMeta& e : m.edges) {
    db::RowSet rows;
    rows.set_columns(m.columns);
    std::vector<int> owner;
    read_edge(conn, side, batch, m, e, read, rows, owner);
    if (m.edges.size() == 1) {
      tb.rows = std::move(rows);
      for (size_t r = 0; r < tb.size(); ++r) tb.index(encode_values(tb.rows, r, m.key_idx), owner[r]);
      return;
    }
    for (size_t r = 0; r < rows.rows(); ++r) {
      std::string key = encode_values(rows, r, m.key_idx);
      if (tb.find(key)) continue;
      append_row(tb.rows, rows, r);
      tb.index(std::move(key), owner[r]);
    }
  }
}

void TreeReader::read_edge(db::Connection& conn, Side side, const Batch& batch, const TableMeta& m, const EdgeMeta& e,
                           Read read, db::RowSet& out, std::vector<int>& owner) const {
  const TableMeta& pm = m_ctx.tables[static_cast<size_t>(e.parent)];
  const TableRows& parent = batch.tables[static_cast<size_t>(e.parent)];
  // Distinct referenced values of the parent rows, each mapped to its parent row's root.
  std::unordered_map<std::string, int> parent_root;
  parent_root.reserve(parent.size());
  std::vector<sql::KeyLiterals> values;
  std::vector<std::string> plain;  // the same values as text, when the foreign key is one column
  for (size_t r = 0; r < parent.size(); ++r) {
    if (any_null(parent.rows, r, e.parent_ref_idx)) continue;
    if (parent_root.emplace(encode_values(parent.rows, r, e.parent_ref_idx), parent.root[r]).second) {
      values.push_back(wrap(literals(parent.rows, r, e.parent_ref_idx, e.fk_binary, e.fk_integer), e.fk_wrap));
      if (e.fk_idx.size() == 1) plain.push_back(parent.rows.text(r, e.parent_ref_idx[0]));
    }
  }
  const bool source = side == Side::source;
  const std::string& name = source ? m.source_name : m.destination_name;
  // On the foreign key's index whatever the statistics say (key_index.h).
  const std::string hint = m_ctx.indexes.hint(conn, name, e.foreign_key);
  std::string select = m.select_list, from = name + hint, join;
  if (e.collated_fk) {
    select = read_list(m, "c");
    for (size_t k = 0; k < e.parent_ref_idx.size(); ++k) select += ", p." + sql::ident(pm.columns[e.parent_ref_idx[k]]);
    from = name + " AS c" + hint;
    join = " JOIN " + (source ? pm.source_name : pm.destination_name) + " AS p ON ";
    for (size_t k = 0; k < e.fk_idx.size(); ++k) {
      join += (k ? " AND c." : "c.") + sql::ident(m.columns[e.fk_idx[k]]) + " = p." +
              sql::ident(pm.columns[e.parent_ref_idx[k]]);
    }
  }
  // A locked read of the children takes only the matching rows' locks on the foreign-key index (the delete's
  // transaction runs at READ COMMITTED) unless the relation is declared only in the config; then the caller's
  // transaction runs at REPEATABLE READ so that these reads also lock the gaps: an application insert of a child
  // under one of these parents waits for the delete's commit instead of slipping in unseen (no foreign key
  // would stop it).
  const char* lock = read == Read::locked ? " FOR UPDATE" : "";
  std::vector<std::string> row_parent;
  const size_t ncols = m.columns.size();
  std::vector<std::string> lists;
  // A plain read of children under an unbroken run of integer parent keys: one range of the foreign-key index.
  // Never locked: a locked range read would also lock the index entry after it.
  if (read == Read::plain && !e.collated_fk && e.fk_idx.size() == 1) {
    if (auto range = run_range(e.foreign_key[0], m.integer[e.fk_idx[0]], plain)) lists.push_back(*range);
  }
  if (lists.empty()) lists = key_lists(e.foreign_key, values, statement_budget(conn), e.collated_fk ? "c" : "");
  for (const auto& list : lists) {
    conn.stream(fmt::format("SELECT {} FROM {}{} WHERE {}{}", select, from, join, list, lock),
                [&](const char* const* cells, const unsigned long* lengths, size_t cols) {
                  for (size_t c = 0; c < ncols; ++c) out.push(cells[c], cells[c] ? lengths[c] : 0);
                  if (e.collated_fk) {
                    std::string enc;
                    for (size_t c = ncols; c < cols; ++c) {
                      enc += encode_values(std::vector<std::string>{std::string(cells[c], lengths[c])});
                    }
                    row_parent.push_back(std::move(enc));
                  }
                });
  }
  for (size_t r = 0; r < out.rows(); ++r) {
    std::string fk = e.collated_fk ? row_parent[r] : encode_values(out, r, e.fk_idx);
    auto it = parent_root.find(fk);
    owner.push_back(it == parent_root.end() ? -1 : it->second);
  }
}

}  // namespace goarchive::pipeline

#include "pipeline/returning_delete.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/holds.h"
#include "pipeline/rows.h"
#include "plan/integer_run.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {
// A table this large is never scanned for a batch's keys: such a plan is taken as a misplan.
constexpr unsigned long k_large_table_rows = 10000;
}  // namespace

namespace {

// ER_ROW_IS_REFERENCED, ER_ROW_IS_REFERENCED_2: a row still references the one being deleted.
bool still_referenced(const db::DbError& e) { return e.code() == 1217 || e.code() == 1451; }

}  // namespace

bool ReturningDelete::applies() const {
  return (m_ctx.mode == Mode::archive || m_ctx.mode == Mode::purge) && m_ctx.src.dialect().delete_returning() &&
         !m_refused.load() && !m_scans.load() && !Holds(m_ctx).any() &&
         (!slow_key_lists() || m_ctx.root().key_integer.front()) && (m_ctx.tables.size() == 1 || guarded_tree());
}

// A root key of several columns that are not all whole numbers goes by key list, `(id, created) IN (..)`. When
// the table also has an index that starts with a later key column (an index on created), MariaDB 10.11 weighs
// that index for every value of the list, and a single-table DELETE cannot be told not to: measured on 120,000
// rows, a DELETE .. RETURNING of 1,000 (BIGINT, DATE) keys took 1.2 s (61 ms without that index), the locked
// re-read with FORCE INDEX 28 ms and the delete through the join on the primary key 19 ms. Such a root goes by
// ranges of its leading key column instead, when that is an integer column whose values in the batch are an
// unbroken run (leading_run), each value once: `id BETWEEN lo AND hi AND (where) ORDER BY id, created LIMIT n`
// is one range of the primary key (4 ms for 1,000 rows of the same table, against 7.5 ms for the locked re-read
// and 10 ms for the delete through the join); any other batch takes the locked re-read (Remover).
bool ReturningDelete::slow_key_lists() const {
  const TableMeta& root = m_ctx.root();
  if (root.key_cols.size() < 2) return false;
  if (std::all_of(root.key_integer.begin(), root.key_integer.end(), [](bool b) { return b; })) return false;
  return m_ctx.indexes.indexed_apart(m_ctx.src, root.source_name, root.key_cols);
}

bool ReturningDelete::guarded_tree() const {
  if (!m_ctx.source_fk_checks || m_ctx.gap_locks) return false;
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    if (t > 0 && (m.edges.size() != 1 || m.edges[0].config_only || m.edges[0].collated_fk)) return false;
    // Each foreign key into this table is one of its children's relations, over the columns the relation
    // names on both sides, references a unique key (a child row then has one parent row), and refuses the
    // parent's delete.
    for (const auto& fk : m.source.referenced_by) {
      if (!fk.restricts()) return false;
      bool unique = false;
      for (const auto& key : m.source.unique_keys) unique = unique || same_names(key, fk.ref_columns);
      bool relation = false;
      for (const auto& c : m_ctx.tables) {
        if (c.edges.size() != 1 || c.edges[0].parent != static_cast<int>(t)) continue;
        std::vector<std::string> refs;
        for (size_t i : c.edges[0].parent_ref_idx) refs.push_back(m.columns[i]);
        relation = relation || (ascii_lower(fk.database) == ascii_lower(c.source.database) &&
                                ascii_lower(fk.table) == ascii_lower(c.node.table) &&
                                same_names(fk.columns, c.edges[0].foreign_key) && same_names(fk.ref_columns, refs));
      }
      if (!unique || !relation) return false;
    }
  }
  return true;
}

// A purge deletes every root that still matches `where`, changed or not: of one table, which keys went is all it
// compares, and the rest of each row would only cross the network (measured on a log table of 172,000 rows: 5.2-8.0
// against 6.2-8.6 ms per batch from the first DELETE to the commit, medians of 8 runs 1.32 s against 1.48 s). A
// tree's child returns its whole row: its foreign key says which root it belongs to now.
bool ReturningDelete::returns_keys_only() const { return m_ctx.mode == Mode::purge && m_ctx.tables.size() == 1; }

std::string ReturningDelete::returning_list(size_t t) const {
  const TableMeta& m = m_ctx.tables[t];
  if (!returns_keys_only()) return m.select_list;
  std::string out;
  for (size_t k = 0; k < m.key_idx.size(); ++k) out += (k ? ", " : "") + read_expression(m, m.key_idx[k], "");
  return out;
}

std::optional<std::vector<sql::IntegerRun>> ReturningDelete::leading_runs(const Batch& batch) const {
  if (!m_ctx.root().key_integer.front()) return std::nullopt;
  std::vector<std::string> lead;
  lead.reserve(batch.root_keys.size());
  for (const auto& key : batch.root_keys) lead.push_back(key.front());
  return sql::integer_runs(lead, static_cast<size_t>(m_ctx.job.processing.delete_batch_size));
}

bool ReturningDelete::applies(const Batch& batch) const {
  if (!applies() || batch.recovery || batch.unproven || batch.id == 0 || batch.roots.empty()) return false;
  if (slow_key_lists() && !leading_runs(batch)) return false;
  for (size_t i = 0; i < batch.roots.size(); ++i) {
    if (batch.stays(i)) return false;
  }
  // Every copied row belongs to a root of the batch.
  for (const auto& tb : batch.tables) {
    for (int owner : tb.root) {
      if (owner < 0) return false;
    }
  }
  return true;
}

std::vector<std::string> ReturningDelete::parent_conditions(const Batch& batch, size_t t) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& parent = batch.tables[static_cast<size_t>(m.edges[0].parent)];
  const TableRows& tb = batch.tables[t];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  const size_t budget = statement_budget(m_ctx.src);
  std::map<std::string, size_t> children;  // encoded foreign-key value -> copied rows with it
  for (size_t r = 0; r < tb.size(); ++r) ++children[encode_values(tb.rows, r, m.fk_idx)];
  std::set<std::string> taken;
  std::vector<std::string> out;
  std::vector<sql::KeyLiterals> chunk;
  size_t rows = 0, bytes = 0;
  auto flush = [&] {
    if (!chunk.empty()) out.push_back("(" + sql::key_in(m.node.foreign_key, chunk, "") + ")");
    chunk.clear();
    rows = bytes = 0;
  };
  for (size_t r = 0; r < parent.size(); ++r) {
    if (any_null(parent.rows, r, m.parent_ref_idx)) continue;
    std::string v = encode_values(parent.rows, r, m.parent_ref_idx);
    auto kids = children.find(v);
    if (kids == children.end() || !taken.insert(v).second) continue;  // no child copied, or named already
    sql::KeyLiterals lit = wrap(literals(parent.rows, r, m.parent_ref_idx, m.fk_binary, m.fk_integer), m.fk_wrap);
    size_t size = 8;
    for (const auto& x : lit) size += x.size() + 2;
    if (!chunk.empty() && (rows + kids->second > per_statement || bytes + size > budget)) flush();
    chunk.push_back(std::move(lit));
    rows += kids->second;
    bytes += size;
  }
  flush();
  return out;
}

std::vector<std::string> ReturningDelete::conditions(const Batch& batch, size_t t, bool with_where) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  const size_t per_statement = static_cast<size_t>(m_ctx.job.processing.delete_batch_size);
  const std::string where = with_where ? fmt::format(" AND ({})", m_ctx.job.where) : std::string();
  std::vector<size_t> all(tb.size()), rest;
  for (size_t r = 0; r < all.size(); ++r) all[r] = r;
  // A child whose keys are no unbroken run and not single whole numbers (a composite key with a DATE column,
  // say) goes through its parents' keys: `fk IN (...)` is one range of the foreign key's index per parent,
  // where a list of composite keys is slow to plan. It also deletes, and returns, any child of theirs that was
  // not copied: the comparison below then sends the batch back.
  if (t > 0 && !(m.key_idx.size() == 1 && m.key_integer[0])) {
    key_ranges(m, tb.rows, all, per_statement, rest);
    if (!rest.empty()) return parent_conditions(batch, t);  // not every row is in a run of its leading value
    rest.clear();
  }
  std::vector<std::string> out;
  // `ORDER BY key LIMIT n`: the range stops at its n-th row while they all still match, so it never reads, let
  // alone waits for, the row after it.
  const std::string order = sql::ident_list(m.key_cols);
  if (t == 0 && slow_key_lists()) {
    // The leading column's run (applies() checked there is one): the batch's rows are the first n of the range
    // in key order that match `where`; a row of the range that is not one of them (another `created` under an
    // id of the run, since matching or inserted) is returned, or cuts the last one off, and the comparison
    // sends the batch back.
    const auto runs = leading_runs(batch);
    for (const auto& run : runs.value()) {
      out.push_back(fmt::format("({}){} ORDER BY {} LIMIT {}", sql::between(m.key_cols.front(), run), where, order,
                                run.count));
    }
    return out;
  }
  for (const auto& range : key_ranges(m, tb.rows, all, per_statement, rest)) {
    out.push_back(fmt::format("({}){} ORDER BY {} LIMIT {}", range.where, where, order, range.count));
  }
  const auto keys = primary_keys(m, tb.rows, rest);
  for (auto& list : key_lists(m.key_cols, keys, statement_budget(m_ctx.src), "", per_statement)) {
    out.push_back(fmt::format("({}){}", list, where));
  }
  return out;
}

bool ReturningDelete::delete_table(Batch& batch, size_t t, std::string& why) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& copied = batch.tables[t];
  if (copied.size() == 0) return true;
  const bool keys_only = returns_keys_only();
  std::vector<size_t> key_at = m.key_idx;  // the key's positions in the returned rows
  if (keys_only) {
    for (size_t k = 0; k < key_at.size(); ++k) key_at[k] = k;
  }
  const std::string returning = returning_list(t);
  db::RowSet got;
  got.set_columns(keys_only ? m.key_cols : m.columns);
  const size_t ncols = keys_only ? m.key_idx.size() : m.columns.size();
  for (const auto& cond : conditions(batch, t, t == 0)) {
    const std::string statement = fmt::format("DELETE FROM {} WHERE {} RETURNING {}", m.source_name, cond, returning);
    // A single-table DELETE takes no index hint and has no join form: its plan is the optimizer's, from the
    // table's statistics. Where it would scan a table that holds k_large_table_rows rows or more (counted: the
    // statistics may say far fewer), locking and waiting for every row, every batch of the run goes by the
    // locked re-read and the delete through the key's index instead. A small table is scanned as the optimizer
    // chose. A key range (`BETWEEN .. ORDER BY ..
    // LIMIT n`) is one range, which MariaDB 10.11 estimates at no more than half the rows it believes the table
    // holds and so keeps (measured on statistics of 61 rows: type range), and is not EXPLAINed.
    // The leading column's range of a key whose later column has an index of its own is EXPLAINed too: it must
    // stay on the primary key, never the range of that index over every row matching `where`.
    const bool leading = t == 0 && slow_key_lists();
    if (m_plan_checked.size() != m_ctx.tables.size()) m_plan_checked.assign(m_ctx.tables.size(), 0);
    if (!m_plan_checked[t] && (leading || cond.find(" ORDER BY ") == std::string::npos)) {
      m_plan_checked[t] = 1;
      auto scan = scan_in_plan(m_ctx.src, statement, leading ? "PRIMARY" : "");
      if (scan && holds_at_least(m_ctx.src, m.source_name, k_large_table_rows)) {
        m_scans = true;
        spdlog::info("the source's statistics of {} would have DELETE ... RETURNING read {} (EXPLAIN); every batch "
                     "is deleted through the key's index after a locked re-read",
                     m.node.table, scan->what);
        why = "the source would scan the table";
        return false;
      }
    }
    m_ctx.src.stream(statement,
                     [&](const char* const* cells, const unsigned long* lengths, size_t) {
                       for (size_t c = 0; c < ncols; ++c) got.push(cells[c], cells[c] ? lengths[c] : 0);
                     });
  }
  std::vector<bool> seen(copied.size(), false);
  for (size_t r = 0; r < got.rows(); ++r) {
    auto at = copied.find(encode_values(got, r, key_at));
    if (!at || seen[*at]) {
      why = name_columns(m.node.table, m.key_cols, got, r, key_at, m.key_binary) +
            " matched a key of the batch but is not a row that was copied";
      return false;
    }
    seen[*at] = true;
    // Byte for byte, the foreign key with the rest: a child moved to another parent is a changed row.
    if (!keys_only && !same_row(copied.rows, *at, got, r)) {
      why = name_row(m, copied.rows, *at) + " changed";
      return false;
    }
  }
  if (got.rows() != copied.size()) {
    for (size_t r = 0; r < copied.size(); ++r) {
      if (!seen[r]) {
        why = name_row(m, copied.rows, r) + (t == 0 ? " is gone or no longer matches `where`" : " is gone");
        break;
      }
    }
    return false;
  }
  batch.deleted[t] += got.rows();
  return true;
}

bool ReturningDelete::run(Batch& batch, std::string& why) const {
  const TableMeta& root = m_ctx.root();
  try {
    if (m_ctx.tables.size() > 1) {
      // The roots first, locked, as the application's writes lock a root before its children (and as a foreign
      // key check does): a child inserted under one of them, or moved there, now waits for this commit.
      // On the key's index whatever the statistics say, and reading a column outside the key where there is
      // one: a key-only read may be planned as a scan of the whole index, FORCE INDEX or not (key_index.h).
      const std::string hint = m_ctx.indexes.hint(m_ctx.src, root.source_name, root.key_cols);
      std::string read = sql::ident_list(root.key_cols);
      for (size_t c = 0; c < root.columns.size(); ++c) {
        if (std::find(root.key_idx.begin(), root.key_idx.end(), c) == root.key_idx.end()) {
          read = sql::ident(root.columns[c]);
          break;
        }
      }
      for (const auto& cond : conditions(batch, 0, false)) {
        m_ctx.src.query(fmt::format("SELECT {} FROM {}{} WHERE {} FOR UPDATE", read, root.source_name, hint, cond));
      }
    }
    // Child-first: a row added to a tree before the lock above still references its parent, whose delete
    // then fails (the foreign key refuses it) instead of leaving the row orphaned.
    for (int ni : m_ctx.delete_order) {
      if (!delete_table(batch, static_cast<size_t>(ni), why)) return false;
    }
  } catch (const db::DbError& e) {
    if (e.retryable() || e.connection_lost()) throw;
    if (still_referenced(e)) {
      why = fmt::format("a row not copied still references a row of the batch ({})", e.what());
      return false;
    }
    m_refused = true;
    spdlog::info("the source refuses DELETE ... RETURNING for this job ({}); every batch is deleted after a locked "
                 "re-read",
                 e.what());
    why = "the source refused the statement";
    return false;
  }
  return true;
}

}  // namespace goarchive::pipeline

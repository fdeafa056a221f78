// Owns the checks that block a root whose own tree may be unchanged: parents staying in the source (diamonds),
// references from outside the job, and rows shared between roots (see holds.h).
#include "pipeline/holds.h"

#include <map>
#include <numeric>

#include <fmt/format.h>

#include "pipeline/rows.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

// Referenced values of a parent's rows in the batch, each with its row's root.
std::map<std::string, int> parent_roots(const TableRows& parent, const std::vector<size_t>& ref_idx) {
  std::map<std::string, int> out;
  for (size_t r = 0; r < parent.size(); ++r) {
    if (!any_null(parent.rows, r, ref_idx)) out.emplace(encode_values(parent.rows, r, ref_idx), parent.root[r]);
  }
  return out;
}

std::vector<size_t> positions(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t{0});
  return v;
}

// The rows of a table, under roots that still move, whose parent through an edge is in no tree of the batch: by
// the parent value they name (`rows`), each value once as literals (`values`).
struct MissingParents {
  std::map<std::string, std::vector<size_t>> rows;  // parent value -> child rows
  std::vector<sql::KeyLiterals> values;
};

MissingParents missing_parents(const Batch& batch, const TableRows& rows, const TableRows& parent,
                               const EdgeMeta& e) {
  std::map<std::string, int> in_batch = parent_roots(parent, e.parent_ref_idx);
  MissingParents out;
  for (size_t r = 0; r < rows.size(); ++r) {
    int owner = rows.root[r];
    if (owner < 0 || batch.stays(static_cast<size_t>(owner)) || any_null(rows.rows, r, e.fk_idx)) continue;
    std::string enc = encode_values(rows.rows, r, e.fk_idx);
    auto it = in_batch.find(enc);
    if (it != in_batch.end() && it->second >= 0) continue;  // the parent is in a tree of this batch
    auto& list = out.rows[enc];
    if (list.empty()) out.values.push_back(wrap(literals(rows.rows, r, e.fk_idx, e.fk_binary), e.fk_wrap));
    list.push_back(r);
  }
  return out;
}

// The parent rows of `values` (columns `ref_names` of `pm`) still in the source. Under the delete's locks they are
// read FOR UPDATE: none of them can be deleted or re-keyed before this commit.
db::RowSet read_source_parents(db::Connection& conn, const TableMeta& pm, const std::vector<std::string>& ref_names,
                               const std::vector<sql::KeyLiterals>& values, Read read) {
  db::RowSet found;
  found.set_columns(ref_names);
  for (const auto& list : key_lists(ref_names, values, statement_budget(conn))) {
    // goarchive: the parents of diamond rows that stay in the source
    conn.stream(fmt::format("SELECT {} FROM {} WHERE {}{}", sql::ident_list(ref_names), pm.source_name, list,
                            read == Read::locked ? " FOR UPDATE" : ""),
                [&](const char* const* cells, const unsigned long* lengths, size_t cols) {
                  for (size_t c = 0; c < cols; ++c) found.push(cells[c], cells[c] ? lengths[c] : 0);
                });
  }
  return found;
}

}  // namespace

bool Holds::any() const {
  for (const auto& m : m_ctx.tables) {
    // copy-only and restore --keep-archive remove nothing: references from outside cannot be broken by them.
    if (m.edges.size() > 1 || (m_ctx.removes_from_src() && !m.outside.empty())) return true;
  }
  return false;
}

void Holds::check(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const {
  if (!any()) return;
  if (batch.fate.size() != batch.roots.size()) batch.fate.assign(batch.roots.size(), RootFate::moved);
  parents(conn, tree, read, batch);
  if (m_ctx.removes_from_src()) outside(conn, tree, read, batch);
  shared(tree, batch);
}

void Holds::block(Batch& batch, int root, const std::string& why) const {
  if (root < 0 || batch.stays(static_cast<size_t>(root))) return;
  batch.leave(static_cast<size_t>(root), RootFate::blocked, why);
  batch.blocked.push_back(why);
}

void Holds::parents(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const {
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    if (m.edges.size() < 2) continue;
    for (const EdgeMeta& e : m.edges) parents_through(conn, tree, read, m, tree.tables[t], e, batch);
  }
}

// Is the parent still in the source? Gone means archived (or never there): the row may go. copy-only never gets
// here: it deletes nothing and preflight refuses its diamond jobs (exit 2).
void Holds::parents_through(db::Connection& conn, const Batch& tree, Read read, const TableMeta& m,
                            const TableRows& rows, const EdgeMeta& e, Batch& batch) const {
  const TableMeta& pm = m_ctx.tables[static_cast<size_t>(e.parent)];
  MissingParents missing = missing_parents(batch, rows, tree.tables[static_cast<size_t>(e.parent)], e);
  if (missing.values.empty()) return;
  std::vector<std::string> ref_names;
  for (size_t k : e.parent_ref_idx) ref_names.push_back(pm.columns[k]);
  db::RowSet found = read_source_parents(conn, pm, ref_names, missing.values, read);
  std::vector<bool> ref_binary;
  for (size_t k : e.parent_ref_idx) ref_binary.push_back(pm.binary[k]);
  std::vector<size_t> idx = positions(ref_names.size());
  for (size_t f = 0; f < found.rows(); ++f) {
    auto it = missing.rows.find(encode_values(found, f, idx));
    // Matched by collation, not by bytes: which child it is cannot be told, so every such child stays.
    std::vector<std::pair<const std::string, std::vector<size_t>>*> which;
    if (it != missing.rows.end()) which.push_back(&*it);
    else for (auto& entry : missing.rows) which.push_back(&entry);
    std::string parent = name_columns(pm.node.table, ref_names, found, f, idx, ref_binary);
    for (auto* entry : which) {
      for (size_t r : entry->second) {
        block(batch, rows.root[r],
              fmt::format("{} still belongs to {}, which stays in the source", name_row(m, rows.rows, r), parent));
      }
    }
  }
}

void Holds::outside(db::Connection& conn, const Batch& tree, Read read, Batch& batch) const {
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    const TableRows& rows = tree.tables[t];
    for (const OutsideRef& ref : m.outside) {
      std::map<std::string, std::vector<size_t>> by_value;
      std::vector<sql::KeyLiterals> values;
      for (size_t r = 0; r < rows.size(); ++r) {
        int owner = rows.root[r];
        if (owner < 0 || batch.stays(static_cast<size_t>(owner)) || any_null(rows.rows, r, ref.ref_idx)) continue;
        auto& list = by_value[encode_values(rows.rows, r, ref.ref_idx)];
        if (list.empty()) values.push_back(literals(rows.rows, r, ref.ref_idx, ref.binary));
        list.push_back(r);
      }
      if (values.empty()) continue;
      // Our FOR UPDATE on the referenced rows already makes an application insert of a new referencing row wait
      // (its foreign-key check takes a shared lock on the parent). The shared locks here make this a current read
      // that waits for referencing rows written but not yet committed, so the count is the one the delete's own
      // foreign-key check would see; they hold only the referencing rows found, until this transaction ends.
      std::string cols = sql::ident_list(ref.fk.columns);
      std::map<int, unsigned long long> per_root;
      std::map<int, size_t> first_row;
      for (const auto& list : key_lists(ref.fk.columns, values, statement_budget(conn))) {
        // goarchive: rows outside the job that still reference the batch
        db::RowSet hits = conn.query(fmt::format("SELECT {}, COUNT(*) FROM {} WHERE {} GROUP BY {}{}", cols,
                                                 ref.source_name, list, cols,
                                                 read == Read::locked ? " LOCK IN SHARE MODE" : ""));
        std::vector<size_t> idx = positions(ref.fk.columns.size());
        for (size_t h = 0; h < hits.rows(); ++h) {
          unsigned long long n = std::stoull(hits.text(h, ref.fk.columns.size()));
          auto it = by_value.find(encode_values(hits, h, idx));
          std::vector<const std::vector<size_t>*> which;
          if (it != by_value.end()) which.push_back(&it->second);
          else for (const auto& entry : by_value) which.push_back(&entry.second);  // matched by collation only
          for (const auto* rs : which) {
            for (size_t r : *rs) {
              per_root[rows.root[r]] += n;
              first_row.emplace(rows.root[r], r);
            }
          }
        }
      }
      for (const auto& [root, n] : per_root) {
        block(batch, root,
              fmt::format("{} stays: blocked by {}.{}: {} row{} of {} still reference{} {}",
                          name_key(m_ctx.root(), batch.root_keys[static_cast<size_t>(root)]), ref.fk.table,
                          ref.fk.name, n, n == 1 ? "" : "s", ref.fk.table, n == 1 ? "s" : "",
                          name_row(m, rows.rows, first_row[root])));
      }
    }
  }
}

void Holds::shared(const Batch& tree, Batch& batch) const {
  std::vector<size_t> group(batch.roots.size());
  std::iota(group.begin(), group.end(), size_t{0});
  auto find = [&](size_t x) {
    while (group[x] != x) x = group[x] = group[group[x]];
    return x;
  };
  std::map<size_t, std::string> joined_by;  // root -> the row that joins it to another root
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    const TableMeta& m = m_ctx.tables[t];
    if (m.edges.size() < 2) continue;
    const TableRows& rows = tree.tables[t];
    for (const EdgeMeta& e : m.edges) {
      std::map<std::string, int> in_batch = parent_roots(tree.tables[static_cast<size_t>(e.parent)], e.parent_ref_idx);
      for (size_t r = 0; r < rows.size(); ++r) {
        int owner = rows.root[r];
        if (owner < 0 || any_null(rows.rows, r, e.fk_idx)) continue;
        auto it = in_batch.find(encode_values(rows.rows, r, e.fk_idx));
        if (it == in_batch.end() || it->second < 0 || it->second == owner) continue;
        auto a = static_cast<size_t>(owner), b = static_cast<size_t>(it->second);
        group[find(a)] = find(b);
        joined_by.emplace(a, name_row(m, rows.rows, r));
        joined_by.emplace(b, name_row(m, rows.rows, r));
      }
    }
  }
  if (joined_by.empty()) return;
  std::map<size_t, size_t> staying;  // group -> a root of it that stays
  for (const auto& [root, row] : joined_by) {
    if (batch.stays(root)) staying.emplace(find(root), root);
  }
  for (const auto& [root, row] : joined_by) {
    auto it = staying.find(find(root));
    if (it == staying.end() || batch.stays(root)) continue;
    block(batch, static_cast<int>(root),
          fmt::format("{} is shared with {}, which stays in the source", row,
                      name_key(m_ctx.root(), batch.root_keys[it->second])));
  }
}

}  // namespace goarchive::pipeline

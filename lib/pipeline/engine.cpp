#include "pipeline/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Bytes per statement: well below max_allowed_packet (a larger one makes the server drop the connection).
size_t statement_budget(const db::Connection& conn) {
  return std::clamp<size_t>(conn.max_allowed_packet() / 2, 64 * 1024, 8 * 1024 * 1024);
}

void append_u32(std::string& out, uint32_t n) {
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
}

std::string encode_values(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx) {
  std::string out;
  for (size_t i : idx) {
    if (rows.is_null(r, i)) {
      out.append("\xff\xff\xff\xff", 4);
      continue;
    }
    const std::string& v = rows.cell(r, i);
    append_u32(out, static_cast<uint32_t>(v.size()));
    out += v;
  }
  return out;
}

bool any_null(const db::RowSet& rows, size_t r, const std::vector<size_t>& idx) {
  return std::any_of(idx.begin(), idx.end(), [&](size_t i) { return rows.is_null(r, i); });
}

}  // namespace

std::vector<TableMeta> describe(const plan::Tree& tree, const std::vector<schema::TableInfo>& source_tables,
                                const config::Job& job, const std::string& source_db, const std::string& dest_db) {
  std::vector<TableMeta> out;
  for (size_t i = 0; i < tree.nodes().size(); ++i) {
    TableMeta m;
    m.node = tree.nodes()[i];
    m.source = source_tables[i];
    m.source_name = sql::qualified(source_db, m.node.table);
    m.destination_name = sql::qualified(dest_db, m.node.table);
    for (const auto& c : m.source.columns) {
      if (c.generated) continue;
      m.columns.push_back(c.name);
      m.binary.push_back(c.binary);
    }
    auto pos = [&](const std::string& col) -> size_t {
      for (size_t k = 0; k < m.columns.size(); ++k) {
        if (ascii_lower(m.columns[k]) == ascii_lower(col)) return k;
      }
      throw PreflightError(fmt::format("column {} of table {} is missing or generated", col, m.node.table));
    };
    m.key_cols = i == 0 && !job.primary_key.empty() ? job.primary_key : m.source.primary_key;
    for (const auto& k : m.key_cols) m.key_idx.push_back(pos(k));
    for (const auto& f : m.node.foreign_key) {
      m.fk_idx.push_back(pos(f));
      if (const schema::Column* col = m.source.column(f); col && !col->collation.empty()) m.collated_fk = true;
    }
    m.select_list = sql::ident_list(m.columns);
    out.push_back(std::move(m));
  }
  // Referenced columns are positions in the parent's column list.
  for (size_t i = 1; i < out.size(); ++i) {
    const TableMeta& parent = out[static_cast<size_t>(out[i].node.parent)];
    std::vector<std::string> refs = out[i].node.references.empty() ? parent.key_cols : out[i].node.references;
    for (const auto& r : refs) {
      size_t k = 0;
      while (k < parent.columns.size() && ascii_lower(parent.columns[k]) != ascii_lower(r)) ++k;
      if (k == parent.columns.size()) {
        throw PreflightError(fmt::format("column {} of table {} (referenced by {}) is missing", r, parent.node.table,
                                         out[i].node.table));
      }
      out[i].parent_ref_idx.push_back(k);
    }
  }
  return out;
}

Engine::Engine(Mode mode, const config::Job& job, std::vector<TableMeta> tables, db::Connection& source,
               db::Connection& destination, const tracking::Registry& registry, unsigned long long job_id,
               unsigned long long run_id, std::string scope, Hooks hooks)
    : m_mode(mode), m_job(job), m_tables(std::move(tables)), m_src(source), m_dst(destination),
      m_registry(registry), m_job_id(job_id), m_run_id(run_id), m_scope(std::move(scope)), m_hooks(std::move(hooks)) {
  plan::Tree tree(job);
  m_copy_order = tree.copy_order();
  for (const auto& t : m_tables) m_stats.tables.push_back(TableStats{t.node.table, 0, 0, 0, 0});
}

size_t Engine::chunk_rows() const { return 1000; }

std::string Engine::row_digest(const db::RowSet& rows, size_t r) const {
  // The row serialisation (documented in goarchive(1)): per column, 0x00 for NULL, else 0x01, the value's
  // length as 4 bytes big-endian, and the value as the server sends it in text (time_zone +00:00).
  std::string buf;
  for (size_t c = 0; c < rows.cols(); ++c) {
    if (rows.is_null(r, c)) {
      buf.push_back('\0');
      continue;
    }
    const std::string& v = rows.cell(r, c);
    buf.push_back('\1');
    append_u32(buf, static_cast<uint32_t>(v.size()));
    buf += v;
  }
  return sha256(buf);
}

std::string Engine::encode_row_key(const TableMeta& m, const db::RowSet& rows, size_t r) const {
  return encode_values(rows, r, m.key_idx);
}

sql::KeyLiterals Engine::literals(const TableMeta& m, const db::RowSet& rows, size_t r, const std::vector<size_t>& idx,
                                  const std::vector<bool>& binary) const {
  (void)m;
  sql::KeyLiterals out;
  out.reserve(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) out.push_back(sql::literal(rows.get(r, idx[k]), binary[k]));
  return out;
}

std::string Engine::in_clause(const std::vector<std::string>& cols, const std::vector<sql::KeyLiterals>& keys) const {
  return sql::key_in(cols, keys);
}

std::string Engine::in_clause_alias(const std::vector<std::string>& cols, const std::vector<sql::KeyLiterals>& keys,
                                    const std::string& alias) const {
  return sql::key_in(cols, keys, alias);
}

// ---------------------------------------------------------------------------------------------------------------
// Root selection

std::string Engine::keyset_query(const std::vector<std::string>* after, const std::string& columns) const {
  const TableMeta& root = m_tables[0];
  std::vector<bool> bin;
  for (size_t i : root.key_idx) bin.push_back(root.binary[i]);
  std::string cond = "(" + m_job.where + ")";
  if (after) {
    sql::KeyLiterals last;
    for (size_t k = 0; k < after->size(); ++k) last.push_back(sql::literal((*after)[k], bin[k]));
    cond += " AND " + sql::keyset_after(root.key_cols, last);
  }
  std::string order;
  for (size_t k = 0; k < root.key_cols.size(); ++k) order += (k ? ", " : "") + sql::ident(root.key_cols[k]);
  // A plain, non-locking read (seed 000, I3): the application's writes are never blocked by it. FORCE INDEX
  // keeps the walk on the primary key: an index on the `where` column would otherwise make every batch sort
  // all remaining cold rows (pt-archiver forces the index for the same reason).
  bool on_primary = root.key_cols == root.source.primary_key;
  return fmt::format("SELECT {} FROM {}{} WHERE {} ORDER BY {} LIMIT {}", columns, root.source_name,
                     on_primary ? " FORCE INDEX (PRIMARY)" : "", cond, order, m_job.processing.batch_size);
}

void Engine::read_new_batch(Batch& batch, const std::vector<std::string>* after, bool filter_copied) {
  const TableMeta& root = m_tables[0];
  batch.tables.assign(m_tables.size(), TableBatch{});
  m_src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  db::Transaction snapshot(m_src, true, true);
  db::RowSet rows = m_src.query(keyset_query(after, root.select_list));
  std::vector<size_t> keep;
  for (size_t r = 0; r < rows.rows(); ++r) {
    std::vector<std::string> key;
    for (size_t i : root.key_idx) key.push_back(rows.cell(r, i));
    batch.roots.push_back(tracking::encode_key(key));
    batch.root_keys.push_back(std::move(key));
  }
  if (!batch.root_keys.empty()) m_next_after = batch.root_keys.back();
  if (m_mode == Mode::copy_only && filter_copied && !batch.roots.empty()) {
    // Roots this job copied before are not copied again.
    std::vector<std::string> hashes;
    for (const auto& r : batch.roots) hashes.push_back(r.hash);
    auto done = m_registry.marked(m_dst, m_job_id, hashes, "copied");
    std::set<std::string> skip(done.begin(), done.end());
    std::vector<std::vector<std::string>> keys;
    std::vector<tracking::RootKey> roots;
    for (size_t i = 0; i < batch.roots.size(); ++i) {
      if (skip.count(batch.roots[i].hash)) continue;
      keep.push_back(i);
      keys.push_back(batch.root_keys[i]);
      roots.push_back(batch.roots[i]);
    }
    batch.root_keys = std::move(keys);
    batch.roots = std::move(roots);
  } else {
    for (size_t i = 0; i < rows.rows(); ++i) keep.push_back(i);
  }
  TableBatch& tb = batch.tables[0];
  tb.rows.set_columns(root.columns);
  for (size_t i = 0; i < keep.size(); ++i) {
    size_t r = keep[i];
    for (size_t c = 0; c < rows.cols(); ++c) {
      if (rows.is_null(r, c)) tb.rows.push_null();
      else tb.rows.push(rows.cell(r, c));
    }
    tb.root_of.push_back(static_cast<int>(i));
    tb.by_key[batch.roots[i].encoded] = i;
    tb.key.push_back(batch.roots[i].encoded);
  }
  discover(m_src, false, batch, false);
  snapshot.commit();
  batch.loaded = true;
}

void Engine::read_snapshot(Batch& batch) {
  // One consistent snapshot for the whole tree: every table is read as of the same instant, without locks.
  m_src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  db::Transaction snapshot(m_src, true, true);
  load_roots(m_src, m_tables[0].source_name, batch, false);
  if (batch.recovery) {
    // A root that no longer matches `where` (the application revived it) is not archived by the recovery.
    const TableMeta& root = m_tables[0];
    TableBatch& tb = batch.tables[0];
    batch.withdrawn.assign(batch.roots.size(), false);
    std::vector<bool> bin;
    for (size_t i : root.key_idx) bin.push_back(root.binary[i]);
    for (size_t start = 0; start < tb.rows.rows(); start += chunk_rows()) {
      std::vector<sql::KeyLiterals> keys;
      for (size_t r = start; r < std::min(tb.rows.rows(), start + chunk_rows()); ++r) {
        keys.push_back(literals(root, tb.rows, r, root.key_idx, bin));
      }
      db::RowSet out = m_src.query(fmt::format("SELECT {} FROM {} WHERE {} AND (({}) IS NOT TRUE)",
                                               sql::ident_list(root.key_cols), root.source_name,
                                               in_clause(root.key_cols, keys), m_job.where));
      for (size_t r = 0; r < out.rows(); ++r) {
        std::vector<size_t> all(out.cols());
        for (size_t c = 0; c < all.size(); ++c) all[c] = c;
        auto it = tb.by_key.find(encode_values(out, r, all));
        if (it != tb.by_key.end() && tb.root_of[it->second] >= 0) {
          batch.withdrawn[static_cast<size_t>(tb.root_of[it->second])] = true;
        }
      }
    }
    drop_roots(batch, batch.withdrawn);
  }
  discover(m_src, false, batch, false);
  snapshot.commit();
  batch.loaded = true;
}

void Engine::drop_roots(Batch& batch, const std::vector<bool>& drop) {
  if (std::none_of(drop.begin(), drop.end(), [](bool b) { return b; })) return;
  for (auto& tb : batch.tables) {
    if (tb.rows.cols() == 0) continue;
    TableBatch kept;
    kept.rows.set_columns(tb.rows.names());
    for (size_t r = 0; r < tb.rows.rows(); ++r) {
      int root = tb.root_of[r];
      if (root >= 0 && static_cast<size_t>(root) < drop.size() && drop[static_cast<size_t>(root)]) continue;
      for (size_t c = 0; c < tb.rows.cols(); ++c) {
        if (tb.rows.is_null(r, c)) kept.rows.push_null();
        else kept.rows.push(tb.rows.cell(r, c));
      }
      kept.root_of.push_back(root);
      kept.by_key[tb.key[r]] = kept.key.size();
      kept.key.push_back(tb.key[r]);
    }
    tb = std::move(kept);
  }
}

// Reads the root rows of the batch by exact key from `table_name` (source or destination).
void Engine::load_roots(db::Connection& conn, const std::string& table_name, Batch& batch, bool for_update) {
  const TableMeta& root = m_tables[0];
  TableBatch& tb = batch.tables[0];
  tb = TableBatch{};
  std::vector<bool> bin;
  for (size_t i : root.key_idx) bin.push_back(root.binary[i]);
  std::map<std::string, int> root_index;
  for (size_t i = 0; i < batch.root_keys.size(); ++i) {
    std::string enc;
    for (const auto& v : batch.root_keys[i]) {
      append_u32(enc, static_cast<uint32_t>(v.size()));
      enc += v;
    }
    root_index[enc] = static_cast<int>(i);
  }
  for (size_t start = 0; start < batch.root_keys.size(); start += chunk_rows()) {
    std::vector<sql::KeyLiterals> keys;
    for (size_t i = start; i < std::min(batch.root_keys.size(), start + chunk_rows()); ++i) {
      sql::KeyLiterals lit;
      for (size_t k = 0; k < batch.root_keys[i].size(); ++k) lit.push_back(sql::literal(batch.root_keys[i][k], bin[k]));
      keys.push_back(std::move(lit));
    }
    db::RowSet part = conn.query(fmt::format("SELECT {} FROM {} WHERE {}{}", root.select_list, table_name,
                                             in_clause(root.key_cols, keys), for_update ? " FOR UPDATE" : ""));
    if (tb.rows.cols() == 0) tb.rows.set_columns(part.names());
    for (size_t r = 0; r < part.rows(); ++r) {
      for (size_t c = 0; c < part.cols(); ++c) {
        if (part.is_null(r, c)) tb.rows.push_null();
        else tb.rows.push(part.cell(r, c));
      }
    }
  }
  if (tb.rows.cols() == 0) tb.rows.set_columns(root.columns);
  for (size_t r = 0; r < tb.rows.rows(); ++r) {
    std::string key = encode_row_key(root, tb.rows, r);
    auto it = root_index.find(key);
    tb.root_of.push_back(it == root_index.end() ? -1 : it->second);
    tb.by_key[key] = r;
    tb.key.push_back(std::move(key));
  }
}

// Breadth-first along the tree: each child's rows by chunked IN lists over its parent's referenced values.
void Engine::discover(db::Connection& conn, bool destination, Batch& batch, bool for_update) {
  for (int ni : m_copy_order) {
    if (ni == 0) continue;
    const TableMeta& m = m_tables[static_cast<size_t>(ni)];
    const TableMeta& pm = m_tables[static_cast<size_t>(m.node.parent)];
    const TableBatch& parent = batch.tables[static_cast<size_t>(m.node.parent)];
    TableBatch& tb = batch.tables[static_cast<size_t>(ni)];
    tb = TableBatch{};
    tb.rows.set_columns(m.columns);
    std::vector<bool> bin;
    for (size_t k = 0; k < m.fk_idx.size(); ++k) {
      bin.push_back(m.binary[m.fk_idx[k]] || pm.binary[m.parent_ref_idx[k]]);
    }
    // Distinct referenced values of the parent rows, each mapped to its parent row's root.
    std::map<std::string, int> parent_root;
    std::vector<sql::KeyLiterals> values;
    for (size_t r = 0; r < parent.rows.rows(); ++r) {
      if (any_null(parent.rows, r, m.parent_ref_idx)) continue;
      std::string v = encode_values(parent.rows, r, m.parent_ref_idx);
      if (parent_root.emplace(v, parent.root_of[r]).second) {
        values.push_back(literals(pm, parent.rows, r, m.parent_ref_idx, bin));
      }
    }
    const std::string& name = destination ? m.destination_name : m.source_name;
    const std::string& parent_name = destination ? pm.destination_name : pm.source_name;
    std::vector<std::string> row_parent;
    std::string select = m.select_list, from = name, join;
    if (m.collated_fk) {
      select.clear();
      for (size_t c = 0; c < m.columns.size(); ++c) select += (c ? ", c." : "c.") + sql::ident(m.columns[c]);
      for (size_t k = 0; k < m.parent_ref_idx.size(); ++k) select += ", p." + sql::ident(pm.columns[m.parent_ref_idx[k]]);
      from = name + " AS c";
      join = " JOIN " + parent_name + " AS p ON ";
      for (size_t k = 0; k < m.fk_idx.size(); ++k) {
        join += (k ? " AND c." : "c.") + sql::ident(m.columns[m.fk_idx[k]]) + " = p." +
                sql::ident(pm.columns[m.parent_ref_idx[k]]);
      }
    }
    for (size_t start = 0; start < values.size(); start += chunk_rows()) {
      std::vector<sql::KeyLiterals> chunk(values.begin() + static_cast<long>(start),
                                          values.begin() + static_cast<long>(std::min(values.size(), start + chunk_rows())));
      std::string q = fmt::format("SELECT {} FROM {}{} WHERE {}{}", select, from, join,
                                  in_clause_alias(m.node.foreign_key, chunk, m.collated_fk ? "c" : ""),
                                  for_update ? " FOR UPDATE" : "");
      size_t ncols = m.columns.size();
      conn.stream(q, [&](const char* const* cells, const unsigned long* lengths, size_t cols) {
        for (size_t c = 0; c < ncols; ++c) tb.rows.push(cells[c], cells[c] ? lengths[c] : 0);
        if (m.collated_fk) {
          std::string enc;
          for (size_t c = ncols; c < cols; ++c) {
            append_u32(enc, static_cast<uint32_t>(lengths[c]));
            enc.append(cells[c], lengths[c]);
          }
          row_parent.push_back(std::move(enc));
        }
      });
    }
    for (size_t r = 0; r < tb.rows.rows(); ++r) {
      std::string key = encode_row_key(m, tb.rows, r);
      std::string fk = m.collated_fk ? row_parent[r] : encode_values(tb.rows, r, m.fk_idx);
      auto it = parent_root.find(fk);
      tb.root_of.push_back(it == parent_root.end() ? -1 : it->second);
      tb.by_key[key] = r;
      tb.key.push_back(std::move(key));
    }
  }
}

void Engine::compute_digests(Batch& batch) {
  for (auto& tb : batch.tables) {
    tb.digest.clear();
    tb.digest.reserve(tb.rows.rows());
    for (size_t r = 0; r < tb.rows.rows(); ++r) tb.digest.push_back(row_digest(tb.rows, r));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Copy

void Engine::claim(Batch& batch) {
  if (batch.recovery) return;  // a recovered batch keeps its row and claims; it was adopted before it started
  std::string state = m_mode == Mode::purge ? "deleting" : "copied";
  batch.id = m_registry.claim_batch(m_dst, m_job_id, m_run_id, batch.no, m_scope, batch.roots, state);
  batch.version = 1;
}

// The end of a batch, written inside the caller's destination transaction: the batch is done and its claims
// go. A root left in the source because it changed after its copy loses its archived copy in the same
// transaction, so that no row is ever in both servers; the next run archives its current version if it still
// matches `where`.
void Engine::write_finish(Batch& batch) {
  std::vector<int> left_in_source;
  for (size_t i = 0; i < batch.dirty.size(); ++i) {
    if (batch.dirty[i]) left_in_source.push_back(static_cast<int>(i));
  }
  // The new version counts only once the caller's transaction commits (see finish and prepare).
  batch.next_version = m_registry.transition(m_dst, batch.id, {"copied", "deleting"}, "done", batch.version,
                                             static_cast<unsigned>(left_in_source.size()));
  if (m_mode == Mode::archive) refresh(batch, left_in_source);
  if (m_mode == Mode::copy_only) {
    std::vector<std::string> hashes;
    for (const auto& r : batch.roots) hashes.push_back(r.hash);
    m_registry.mark_roots(m_dst, m_job_id, hashes, "copied");
  }
}

// Marks finished batches done in one destination transaction of their own.
void Engine::finish(std::vector<Batch*>& batches) {
  if (batches.empty()) return;
  {
    db::Transaction tx(m_dst);
    for (Batch* b : batches) write_finish(*b);
    m_hooks.before_commit();
    tx.commit();
  }
  for (Batch* b : batches) {
    b->version = b->next_version;
    account(*b);
  }
  batches.clear();
}

// Removes the destination copy of roots that this job copied before (recovered roots, or roots that changed in
// the source after their copy), so that their current version is copied in the same transaction.
void Engine::refresh(Batch& batch, const std::vector<int>& roots) {
  if (roots.empty()) return;
  Batch old;
  old.tables.resize(m_tables.size());
  for (int r : roots) old.root_keys.push_back(batch.root_keys[static_cast<size_t>(r)]);
  load_roots(m_dst, m_tables[0].destination_name, old, false);
  discover(m_dst, true, old, false);
  size_t removed = 0;
  for (int ni : std::vector<int>(m_copy_order.rbegin(), m_copy_order.rend())) {
    const TableMeta& m = m_tables[static_cast<size_t>(ni)];
    const TableBatch& tb = old.tables[static_cast<size_t>(ni)];
    std::vector<bool> bin;
    for (size_t i : m.key_idx) bin.push_back(m.binary[i]);
    for (size_t start = 0; start < tb.rows.rows(); start += chunk_rows()) {
      std::vector<sql::KeyLiterals> keys;
      for (size_t r = start; r < std::min(tb.rows.rows(), start + chunk_rows()); ++r) {
        keys.push_back(literals(m, tb.rows, r, m.key_idx, bin));
      }
      removed += m_dst.execute(fmt::format("DELETE FROM {} WHERE {}", m.destination_name, in_clause(m.key_cols, keys)));
    }
  }
  spdlog::info("batch {}: replaced the earlier destination copy of {} root(s) ({} rows) with their current version",
               batch.no, roots.size(), removed);
}

std::vector<Statement> Engine::build_inserts(const Batch& batch, size_t t, const std::vector<size_t>& rows) const {
  const TableMeta& m = m_tables[t];
  const TableBatch& tb = batch.tables[t];
  std::vector<Statement> out;
  const std::string head = fmt::format("INSERT INTO {} ({}) VALUES ", m.destination_name, m.select_list);
  const size_t budget = statement_budget(m_dst);
  for (size_t r : rows) {
    if (out.empty() || out.back().sql.size() >= budget) {
      out.push_back(Statement{head, {}});
      out.back().sql.reserve(std::min<size_t>(budget + 4096, 1 << 20));
    } else {
      out.back().sql += ',';
    }
    std::string& stmt = out.back().sql;
    stmt += '(';
    for (size_t c = 0; c < m.columns.size(); ++c) {
      if (c) stmt += ',';
      stmt += sql::literal(tb.rows.get(r, c), m.binary[c]);
    }
    stmt += ')';
    out.back().rows.push_back(r);
  }
  return out;
}

void Engine::run_inserts(Batch& batch, size_t t, const std::vector<Statement>& statements) {
  for (const auto& st : statements) {
    try {
      m_dst.execute(st.sql);
      batch.copied[t] += st.rows.size();
    } catch (const db::DbError& e) {
      // A duplicate key is an answer (seed 000, I4): the row is already archived; check it is the same row.
      if (!e.duplicate_key()) throw;
      insert_fallback(batch, t, st.rows);
    }
  }
}

void Engine::insert_rows(Batch& batch, size_t t, const std::vector<size_t>& rows) {
  run_inserts(batch, t, build_inserts(batch, t, rows));
}

void Engine::prebuild(Batch& batch) {
  if (batch.prebuilt) return;
  if (m_job.processing.verification == config::VerifyMethod::sha256) compute_digests(batch);
  for (size_t t = 0; t < m_tables.size(); ++t) {
    const TableMeta& m = m_tables[t];
    TableBatch& tb = batch.tables[t];
    std::vector<size_t> rows(tb.rows.rows());
    for (size_t r = 0; r < rows.size(); ++r) rows[r] = r;
    if (m_mode != Mode::purge) tb.inserts = build_inserts(batch, t, rows);
    std::vector<bool> bin;
    for (size_t i : m.key_idx) bin.push_back(m.binary[i]);
    tb.key_conditions.clear();
    for (size_t start = 0; start < tb.rows.rows(); start += chunk_rows()) {
      std::vector<sql::KeyLiterals> keys;
      for (size_t r = start; r < std::min(tb.rows.rows(), start + chunk_rows()); ++r) {
        keys.push_back(literals(m, tb.rows, r, m.key_idx, bin));
      }
      tb.key_conditions.push_back(in_clause(m.key_cols, keys));
    }
  }
  batch.prebuilt = true;
}

void Engine::insert_fallback(Batch& batch, size_t t, const std::vector<size_t>& rows) {
  const TableMeta& m = m_tables[t];
  const TableBatch& tb = batch.tables[t];
  std::vector<bool> bin;
  for (size_t i : m.key_idx) bin.push_back(m.binary[i]);
  std::vector<sql::KeyLiterals> keys;
  for (size_t r : rows) keys.push_back(literals(m, tb.rows, r, m.key_idx, bin));
  db::RowSet existing =
      m_dst.query(fmt::format("SELECT {} FROM {} WHERE {}", m.select_list, m.destination_name, in_clause(m.key_cols, keys)));
  std::map<std::string, size_t> there;
  for (size_t r = 0; r < existing.rows(); ++r) there[encode_row_key(m, existing, r)] = r;
  std::vector<size_t> missing;
  for (size_t r : rows) {
    auto it = there.find(tb.key[r]);
    if (it == there.end()) {
      missing.push_back(r);
      continue;
    }
    if (row_digest(existing, it->second) != row_digest(tb.rows, r)) {
      std::vector<std::string> key;
      for (size_t i : m.key_idx) key.push_back(tb.rows.cell(r, i));
      throw Error(fmt::format(
          "table {}: the row with key ({}) = ({}) is already in the destination with different content; goarchive "
          "never overwrites an archived row. Compare the two rows, then remove the stale copy from the destination "
          "or exclude the row with `where`; nothing of this batch was committed",
          m.node.table, join(m.key_cols, ", "), join(key, ", ")));
    }
    ++m_stats.tables[t].skipped_existing;
  }
  if (missing.size() == rows.size()) {
    throw Error(fmt::format("table {}: INSERT reported a duplicate key but none of its rows is in the destination; "
                            "a unique key other than the primary key conflicts. Check the destination's unique keys",
                            m.node.table));
  }
  if (!missing.empty()) insert_rows(batch, t, missing);
}

// The rows of a batch, parent-first, inside the caller's destination transaction (after its claim).
void Engine::copy(Batch& batch) {
  batch.copied.assign(m_tables.size(), 0);
  {
    if (batch.recovery) {
      // This job copied these roots before it stopped: replace that copy with the current version of each root
      // that is still in the source, and drop the copy of a root that no longer matches `where`. A root gone
      // from the source was deleted by the earlier run: its copy is the archive and stays.
      std::vector<int> to_refresh;
      std::set<int> present;
      for (int r : batch.tables[0].root_of) present.insert(r);
      for (size_t i = 0; i < batch.roots.size(); ++i) {
        if (present.count(static_cast<int>(i)) || (i < batch.withdrawn.size() && batch.withdrawn[i])) {
          to_refresh.push_back(static_cast<int>(i));
        }
      }
      refresh(batch, to_refresh);
    } else if (m_has_copied_marks) {
      // archive after copy-only of the same job: the earlier copy of these roots is this job's own; replace it
      // with the current version (a row may have changed since), then forget the mark.
      std::vector<std::string> hashes;
      for (const auto& rk : batch.roots) hashes.push_back(rk.hash);
      auto marked = m_registry.marked(m_dst, m_job_id, hashes, "copied");
      if (!marked.empty()) {
        std::set<std::string> set(marked.begin(), marked.end());
        std::vector<int> to_refresh;
        for (size_t i = 0; i < batch.roots.size(); ++i) {
          if (set.count(batch.roots[i].hash)) to_refresh.push_back(static_cast<int>(i));
        }
        refresh(batch, to_refresh);
        m_registry.unmark(m_dst, m_job_id, marked);
      }
    }
    for (int ni : m_copy_order) {
      run_inserts(batch, static_cast<size_t>(ni), batch.tables[static_cast<size_t>(ni)].inserts);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Verify

// Reads the batch back inside the copy transaction (its own writes) and compares it with the source: a batch
// that fails verification rolls back whole, so nothing unverified is ever marked for deletion.
void Engine::verify(Batch& batch) {
  batch.verified.assign(m_tables.size(), 0);
  if (m_job.processing.verification == config::VerifyMethod::none) return;
  auto t0 = Clock::now();
  bool sha = m_job.processing.verification == config::VerifyMethod::sha256;
  for (int ni : m_copy_order) {
    const TableMeta& m = m_tables[static_cast<size_t>(ni)];
    const TableBatch& tb = batch.tables[static_cast<size_t>(ni)];
    size_t found = 0;
    for (const std::string& where : tb.key_conditions) {
      if (!sha) {
        found += std::stoull(m_dst.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE {}", m.destination_name, where))
                                 .value_or("0"));
        continue;
      }
      db::RowSet there = m_dst.query(fmt::format("SELECT {} FROM {} WHERE {}", m.select_list, m.destination_name, where));
      for (size_t r = 0; r < there.rows(); ++r) {
        auto it = tb.by_key.find(encode_row_key(m, there, r));
        if (it == tb.by_key.end()) continue;
        if (row_digest(there, r) != tb.digest[it->second]) {
          std::vector<std::string> kv;
          for (size_t i : m.key_idx) kv.push_back(there.cell(r, i));
          throw Error(fmt::format("verification (sha256) failed for table {}: the destination row ({}) = ({}) differs "
                                  "from the source; nothing was deleted. Inspect both rows; the rerun resumes this batch",
                                  m.node.table, join(m.key_cols, ", "), join(kv, ", ")));
        }
        ++found;
      }
    }
    if (found != tb.rows.rows()) {
      throw Error(fmt::format("verification ({}) failed for table {}: {} rows copied but {} found in the destination; "
                              "nothing was deleted. The rerun resumes this batch",
                              config::to_string(m_job.processing.verification), m.node.table, tb.rows.rows(), found));
    }
    batch.verified[static_cast<size_t>(ni)] += found;
  }
  m_stats.t_verify += since(t0);
}

// ---------------------------------------------------------------------------------------------------------------
// Delete

void Engine::remove_source(Batch& batch) {
  auto t0 = Clock::now();
  bool sha = m_job.processing.verification == config::VerifyMethod::sha256;
  bool compare = m_mode == Mode::archive;
  batch.deleted.assign(m_tables.size(), 0);
  batch.dirty.assign(batch.roots.size(), false);
  batch.reasons.clear();
  // Lock exactly the rows to delete, parent-first, at READ COMMITTED (record locks only, no gap locks), and
  // re-read them: a row changed or added since the copy marks its root dirty, and a dirty root is not deleted.
  Batch locked;
  locked.no = batch.no;
  locked.root_keys = batch.root_keys;
  locked.tables.resize(m_tables.size());
  db::Transaction tx(m_src);
  load_roots(m_src, m_tables[0].source_name, locked, true);
  discover(m_src, false, locked, true);
  if (compare) {
    for (size_t t = 0; t < m_tables.size(); ++t) {
      const TableBatch& now = locked.tables[t];
      const TableBatch& copied = batch.tables[t];
      for (size_t r = 0; r < now.rows.rows(); ++r) {
        int root = now.root_of[r];
        if (root < 0) continue;
        if (static_cast<size_t>(root) < batch.withdrawn.size() && batch.withdrawn[static_cast<size_t>(root)]) continue;
        auto it = copied.by_key.find(now.key[r]);
        bool changed = it == copied.by_key.end();
        if (!changed && sha) changed = row_digest(now.rows, r) != copied.digest[it->second];
        if (changed && !batch.dirty[static_cast<size_t>(root)]) {
          batch.dirty[static_cast<size_t>(root)] = true;
          if (batch.reasons.size() < 5) {
            batch.reasons.push_back(fmt::format("{} row {} {}", m_tables[t].node.table,
                                                to_hex(now.key[r]).substr(0, 24),
                                                it == copied.by_key.end() ? "was added" : "changed"));
          }
        }
      }
    }
  }
  for (int ni : std::vector<int>(m_copy_order.rbegin(), m_copy_order.rend())) {
    const TableMeta& m = m_tables[static_cast<size_t>(ni)];
    const TableBatch& tb = locked.tables[static_cast<size_t>(ni)];
    std::vector<bool> bin;
    for (size_t i : m.key_idx) bin.push_back(m.binary[i]);
    std::vector<sql::KeyLiterals> keys;
    auto flush = [&]() {
      if (keys.empty()) return;
      // By exact key only: no range locks, so the application's inserts are never blocked.
      batch.deleted[static_cast<size_t>(ni)] +=
          m_src.execute(fmt::format("DELETE FROM {} WHERE {}", m.source_name, in_clause(m.key_cols, keys)));
      keys.clear();
    };
    for (size_t r = 0; r < tb.rows.rows(); ++r) {
      int root = tb.root_of[r];
      if (root < 0 || batch.dirty[static_cast<size_t>(root)]) continue;
      if (static_cast<size_t>(root) < batch.withdrawn.size() && batch.withdrawn[static_cast<size_t>(root)]) continue;
      keys.push_back(literals(m, tb.rows, r, m.key_idx, bin));
      if (keys.size() >= static_cast<size_t>(m_job.processing.delete_batch_size)) flush();
    }
    flush();
  }
  fault::point("before_delete_commit");
  m_hooks.before_commit();
  tx.commit();
  fault::point("after_delete_commit");
  batch.t_delete = since(t0);
}

void Engine::finish_all(std::vector<std::unique_ptr<Batch>>& batches) {
  std::vector<Batch*> ps;
  for (auto& b : batches) ps.push_back(b.get());
  finish(ps);
  batches.clear();
}

// prepare() with the end of `pending` batches folded into its transaction. When the batch fails, the earlier
// batches are fine: `settle` waits for what is still under way, and their end is recorded on its own before
// the failure is reported.
void Engine::prepare_after(Batch& batch, std::vector<std::unique_ptr<Batch>>& pending,
                           const std::function<void()>& settle) {
  std::vector<Batch*> ps;
  for (auto& b : pending) ps.push_back(b.get());
  try {
    prepare(batch, ps);
    pending.clear();
  } catch (...) {
    try {
      settle();
      finish_all(pending);
    } catch (const std::exception& e) {
      spdlog::error("the batches before batch {} could not be recorded as done: {}", batch.no, e.what());
    }
    throw;
  }
}

// Counts a batch whose end is committed.
void Engine::account(Batch& batch) {
  size_t dirty = 0;
  for (bool d : batch.dirty) dirty += d ? 1 : 0;
  for (size_t t = 0; t < batch.deleted.size(); ++t) m_stats.tables[t].deleted += batch.deleted[t];
  m_stats.t_delete += batch.t_delete;
  if (dirty) {
    m_stats.roots_changed += dirty;
    spdlog::warn("batch {}: {} root(s) changed in the source after they were copied and were left in the source "
                 "and their archived copy was removed (e.g. {}); the next run archives their current version",
                 batch.no, dirty, join(batch.reasons, "; "));
  }
  m_stats.roots_done += batch.roots.size() - dirty;
  ++m_stats.batches;
  m_stats.roots += batch.roots.size();
  m_hooks.progress(m_stats, "batch done");
  fault::point("after_batch");
}

// The destination side of a batch, in one transaction: the end of the batches whose delete has committed
// (`finished`), then this batch's claim (the guarded write), its rows, their verification and its move to
// deleting (archive) or done (copy-only). One commit per batch on the destination.
void Engine::prepare(Batch& batch, std::vector<Batch*>& finished) {
  spdlog::info("batch {} start: {} root(s){}", batch.no, batch.roots.size(), batch.recovery ? " (recovery)" : "");
  m_stats.t_select += batch.t_read;
  prebuild(batch);
  m_hooks.progress(m_stats, "copying");
  auto t0 = Clock::now();
  batch.copied.assign(m_tables.size(), 0);
  batch.verified.assign(m_tables.size(), 0);
  {
    db::Transaction tx(m_dst);
    for (Batch* f : finished) write_finish(*f);
    claim(batch);
    if (m_mode != Mode::purge) {
      copy(batch);
      spdlog::info("batch {} verification start: method {}", batch.no,
                   config::to_string(m_job.processing.verification));
      verify(batch);
      fault::point("after_verify");
    }
    fault::point("before_copy_commit");
    m_hooks.before_commit();
    tx.commit();
  }
  fault::point("after_copy_commit");
  m_stats.t_copy += since(t0);
  for (size_t t = 0; t < m_tables.size(); ++t) {
    m_stats.tables[t].copied += batch.copied[t];
    m_stats.tables[t].verified += batch.verified[t];
  }
  for (Batch* f : finished) {
    f->version = f->next_version;
    account(*f);
  }
  finished.clear();
}

void Engine::mark_deleting(Batch& batch) {
  if (m_mode != Mode::archive) return;  // purge claims its batches as deleting; copy-only never deletes
  db::Transaction tx(m_dst);
  unsigned v = m_registry.transition(m_dst, batch.id, {"copied", "deleting"}, "deleting", batch.version);
  m_hooks.before_commit();
  tx.commit();
  batch.version = v;
  fault::point("after_mark_deleting");
}

void Engine::process(Batch& batch) {
  if (!batch.loaded) {
    batch.tables.assign(m_tables.size(), TableBatch{});
    auto t0 = Clock::now();
    read_snapshot(batch);
    batch.t_read = since(t0);
  }
  std::vector<Batch*> none;
  prepare(batch, none);
  if (deletes()) {
    mark_deleting(batch);
    m_hooks.gate("delete");
    spdlog::info("batch {} delete phase start", batch.no);
    m_hooks.progress(m_stats, "deleting");
    remove_source(batch);
  }
  std::vector<Batch*> done{&batch};
  finish(done);
}

namespace {

// Runs tasks one after another on its own thread: the owner of the source connection in the pipelined loop.
class SourceWorker {
public:
  SourceWorker() : m_thread([this] { loop(); }) {}
  ~SourceWorker() {
    {
      std::lock_guard<std::mutex> g(m_mutex);
      m_stop = true;
    }
    m_cv.notify_all();
    m_thread.join();  // a task under way finishes (its transaction commits or rolls back); queued ones are dropped
  }
  SourceWorker(const SourceWorker&) = delete;
  SourceWorker& operator=(const SourceWorker&) = delete;

  std::future<void> submit(std::function<void()> fn) {
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(fn));
    std::future<void> f = task->get_future();
    {
      std::lock_guard<std::mutex> g(m_mutex);
      m_queue.push_back([task] { (*task)(); });
    }
    m_cv.notify_one();
    return f;
  }

private:
  void loop() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> l(m_mutex);
        m_cv.wait(l, [this] { return m_stop || !m_queue.empty(); });
        if (m_stop) return;
        job = std::move(m_queue.front());
        m_queue.pop_front();
      }
      job();
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::function<void()>> m_queue;
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace

// archive and purge: the source side of batch n (lock, re-check, delete) and the read of batch n+1 run on a
// worker thread, on the source connection, while the main thread copies and verifies the next batch on the
// destination connection. Each batch still goes read -> copy -> verify -> mark deleting -> delete -> done, in
// that order; at most four batches are in memory (one read ahead, one copying, one deleting, one waiting for
// its done, which rides in the next copy transaction).
bool Engine::pipelined_loop() {
  std::optional<std::vector<std::string>> cursor;  // touched only by worker tasks, in order
  std::unique_ptr<Batch> current, next, deleting;
  std::vector<std::unique_ptr<Batch>> deleted;  // delete committed, end not yet written
  std::future<void> read_done, delete_done;
  SourceWorker worker;  // declared last: destroyed (joined) first, before the batches its tasks use
  auto submit_read = [&](Batch& b) {
    return worker.submit([this, &cursor, pb = &b] {
      auto t0 = Clock::now();
      read_new_batch(*pb, cursor ? &*cursor : nullptr, false);
      if (!pb->root_keys.empty()) cursor = pb->root_keys.back();
      prebuild(*pb);
      pb->t_read = since(t0);
    });
  };
  auto wait_delete = [&]() {
    if (!deleting) return;
    auto t0 = Clock::now();
    delete_done.get();
    m_stats.t_wait_source += since(t0);
    deleted.push_back(std::move(deleting));
  };
  // Writes the end of every batch whose delete committed, in a transaction of its own.
  auto flush = [&]() {
    wait_delete();
    finish_all(deleted);
  };
  if (!m_hooks.boundary("batch")) return false;
  m_hooks.gate("batch");
  current = std::make_unique<Batch>();
  submit_read(*current).get();
  while (!current->roots.empty()) {
    current->no = ++m_batch_no;
    next = std::make_unique<Batch>();
    read_done = submit_read(*next);  // prefetch, behind the delete of the previous batch
    // The end of batches deleted so far rides in this batch's copy transaction.
    prepare_after(*current, deleted, wait_delete);
    m_hooks.gate("delete");
    spdlog::info("batch {} delete phase start", current->no);
    m_hooks.progress(m_stats, "deleting");
    wait_delete();  // the previous batch's delete, which ran beside this batch's copy
    mark_deleting(*current);
    // On the worker: the source delete, beside the next batch's copy on the main thread.
    delete_done = worker.submit([this, pb = current.get()] { remove_source(*pb); });
    deleting = std::move(current);
    auto t0 = Clock::now();
    read_done.get();
    m_stats.t_wait_source += since(t0);
    current = std::move(next);
    if (!m_hooks.boundary("batch")) {
      flush();
      return false;
    }
    m_hooks.gate("batch");
  }
  flush();
  return true;
}

bool Engine::recover() {
  auto counts = m_registry.unfinished_counts(m_dst, m_job_id);
  if (counts.first + counts.second == 0) return true;
  spdlog::info("recovery start: {} root(s) copied, {} root(s) deleting", counts.first, counts.second);
  unsigned long long after = 0;
  while (true) {
    if (!m_hooks.boundary("recovery")) return false;
    auto rows = m_registry.unfinished_batches(m_dst, m_job_id, after, 16);
    if (rows.empty()) break;
    for (const auto& row : rows) {
      after = row.id;
      Batch batch;
      batch.no = ++m_batch_no;
      batch.id = row.id;
      batch.recovery = true;
      for (const auto& enc : row.root_keys) {
        batch.root_keys.push_back(tracking::decode_key(enc));
        batch.roots.push_back(tracking::encode_key(batch.root_keys.back()));
      }
      {
        db::Transaction tx(m_dst);
        batch.version = m_registry.adopt(m_dst, batch.id, m_run_id, batch.no, row.version);
        m_hooks.before_commit();
        tx.commit();
      }
      process(batch);
      m_stats.recovered += batch.roots.size();
      if (!m_hooks.boundary("recovery")) return false;
    }
  }
  spdlog::info("recovery done: {} root(s) finished", m_stats.recovered);
  return true;
}

// copy-only: batch by batch; each batch's move to done rides in the next batch's copy transaction.
bool Engine::batch_loop() {
  std::optional<std::vector<std::string>> last;
  std::vector<std::unique_ptr<Batch>> copied;  // copy committed, not yet marked done
  auto flush = [&]() { finish_all(copied); };
  while (true) {
    if (!m_hooks.boundary("batch")) {
      flush();
      return false;
    }
    if (m_mode != Mode::copy_only) m_hooks.gate("batch");
    auto t0 = Clock::now();
    auto batch = std::make_unique<Batch>();
    m_next_after.clear();
    read_new_batch(*batch, last ? &*last : nullptr);
    batch->t_read = since(t0);
    if (m_next_after.empty()) break;  // no root left
    last = m_next_after;
    if (batch->roots.empty()) continue;  // every root of this range was copied before
    batch->no = ++m_batch_no;
    prepare_after(*batch, copied, [] {});
    copied.push_back(std::move(batch));
  }
  flush();
  return true;
}

bool Engine::run() {
  m_has_copied_marks = m_mode == Mode::archive && m_registry.count_marked(m_dst, m_job_id, "copied") > 0;
  if (!recover()) return false;
  // copy-only has no source side to overlap and filters roots on the destination: it runs batch by batch.
  return deletes() ? pipelined_loop() : batch_loop();
}

std::vector<std::string> Engine::sample_sql() const {
  std::vector<std::string> out;
  const TableMeta& root = m_tables[0];
  std::string order;
  for (size_t k = 0; k < root.key_cols.size(); ++k) order += (k ? ", " : "") + sql::ident(root.key_cols[k]);
  out.push_back(fmt::format("-- select roots (plain read, keyset on the primary key)\nSELECT {} FROM {} FORCE INDEX "
                            "(PRIMARY) WHERE ({}) AND <key> > <last key> ORDER BY {} LIMIT {}",
                            sql::ident_list(root.key_cols), root.source_name, m_job.where, order,
                            m_job.processing.batch_size));
  for (int ni : m_copy_order) {
    const TableMeta& m = m_tables[static_cast<size_t>(ni)];
    if (ni == 0) {
      out.push_back(fmt::format("-- read roots\nSELECT {} FROM {} WHERE {} IN (<batch keys>)", m.select_list,
                                m.source_name, sql::ident_list(m.key_cols)));
    } else {
      out.push_back(fmt::format("-- discover {}\nSELECT {} FROM {} WHERE {} IN (<parent {} values>)", m.node.table,
                                m.select_list, m.source_name, sql::ident_list(m.node.foreign_key),
                                m_tables[static_cast<size_t>(m.node.parent)].node.table));
    }
    if (m_mode != Mode::purge) {
      out.push_back(fmt::format("-- copy {}\nINSERT INTO {} ({}) VALUES (...), (...)", m.node.table, m.destination_name,
                                m.select_list));
    }
  }
  if (m_mode != Mode::copy_only) {
    for (int ni : std::vector<int>(m_copy_order.rbegin(), m_copy_order.rend())) {
      const TableMeta& m = m_tables[static_cast<size_t>(ni)];
      out.push_back(fmt::format("-- delete {} (child-first, by exact key, {} rows per statement)\nDELETE FROM {} WHERE "
                                "{} IN (<keys>)",
                                m.node.table, m_job.processing.delete_batch_size, m.source_name,
                                sql::ident_list(m.key_cols)));
    }
  }
  return out;
}

}  // namespace goarchive::pipeline

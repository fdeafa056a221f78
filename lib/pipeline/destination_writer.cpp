#include "pipeline/destination_writer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/rows.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

// Errors strict mode raises for a value it would store otherwise: data truncated (1265), out of range (1264), an
// incorrect date, integer or string value (1292, 1366, 1367), too long (1406).
// ER_NO_REFERENCED_ROW_2: a foreign key refused a row whose parent is missing.
constexpr unsigned k_fk_refused = 1452;

bool value_refused(unsigned code) {
  return code == 1265 || code == 1264 || code == 1292 || code == 1366 || code == 1367 || code == 1406;
}

std::vector<size_t> all_rows(const TableRows& tb) {
  std::vector<size_t> rows(tb.size());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = r;
  return rows;
}

// A value in LOAD DATA's text format (FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n'):
// the bytes as the server sent them, with the escape, separators and NUL escaped; NULL is \N.
void append_load_field(std::string& out, const db::RowSet& rows, size_t r, size_t c) {
  if (rows.is_null(r, c)) {
    out += "\\N";
    return;
  }
  // Runs without a character to escape are appended whole.
  const std::string_view v = rows.cell(r, c);
  size_t run = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const char* escaped = nullptr;
    switch (v[i]) {
      case '\\': escaped = "\\\\"; break;
      case '\t': escaped = "\\t"; break;
      case '\n': escaped = "\\n"; break;
      case '\0': escaped = "\\0"; break;
      default: continue;
    }
    out.append(v.data() + run, i - run).append(escaped, 2);
    run = i + 1;
  }
  out.append(v.data() + run, v.size() - run);
}

// A row of `size` bytes as copy data must fit the destination's max_allowed_packet (`limit`) with room to spare.
void check_row_size(const TableMeta& m, const TableRows& tb, size_t r, size_t size, size_t limit) {
  if (size + 256 <= limit) return;
  throw Error(fmt::format("the row {} is {} bytes as copy data, more than the destination's max_allowed_packet "
                          "({} bytes); nothing of this batch was copied. Raise max_allowed_packet on the "
                          "destination (SET GLOBAL max_allowed_packet = ...)",
                          name_row(m, tb.rows, r), size, limit));
}

// The server refuses LOAD DATA LOCAL (local_infile = OFF, or the client capability is off).
bool load_refused(const db::DbError& e) { return e.code() == 1148 || e.code() == 4166 || e.code() == 2068; }

// The primary keys of rows `which` as WHERE conditions: the usual AUTO_INCREMENT batch as ranges, the other keys
// as exact-key lists (the destination's key columns are the source's).
std::vector<std::string> primary_key_where(const TableMeta& m, const TableRows& tb, const std::vector<size_t>& which,
                                           size_t budget) {
  std::vector<size_t> rest;
  std::vector<std::string> out;
  for (auto& range : key_ranges(m, tb.rows, which, which.size(), rest)) out.push_back(std::move(range.where));
  for (auto& list : primary_key_lists(m, tb.rows, rest, budget)) out.push_back(std::move(list));
  return out;
}

}  // namespace

void DestinationWriter::prebuild(Batch& batch) const {
  if (batch.prebuilt) return;
  const size_t budget = statement_budget(m_ctx.dst);
  for (size_t t = 0; t < m_ctx.tables.size(); ++t) {
    TableRows& tb = batch.tables[t];
    std::vector<size_t> rows = all_rows(tb);
    if (m_ctx.copies()) tb.inserts = m_bulk ? build_bulk(batch, t, rows) : build_fallback(batch, t, rows);
    // A root read back by its key range builds its exact-key lists only for the rows the range misses.
    if (!reads_root_range(batch, t)) tb.key_lists = primary_key_where(m_ctx.tables[t], tb, rows, budget);
  }
  batch.prebuilt = true;
}

std::vector<Statement> DestinationWriter::build_inserts(const Batch& batch, size_t t,
                                                        const std::vector<size_t>& rows) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  std::vector<Statement> out;
  const std::string head = fmt::format("INSERT INTO {} ({}) VALUES ", m.destination_name, m.insert_list);
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
      out.push_back(Statement{head, {}, {}, false});
      out.back().sql.reserve(std::min<size_t>(budget + 4096, 1 << 20));
    } else {
      out.back().sql += ',';
    }
    out.back().sql += values;
    out.back().rows.push_back(r);
  }
  return out;
}

std::vector<Statement> DestinationWriter::build_fallback(const Batch& batch, size_t t,
                                                         const std::vector<size_t>& rows) const {
  return m_load && !m_ctx.tables[t].has_raw_text ? build_loads(batch, t, rows) : build_inserts(batch, t, rows);
}

std::vector<Statement> DestinationWriter::build_bulk(const Batch& batch, size_t t,
                                                     const std::vector<size_t>& rows) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  std::vector<Statement> out;
  std::string sql = fmt::format("INSERT INTO {} ({}) VALUES (", m.destination_name, m.insert_list);
  for (size_t c = 0; c < m.columns.size(); ++c) sql += c ? ",?" : "?";
  sql += ')';
  const size_t budget = statement_budget(m_ctx.dst);
  const size_t limit = m_ctx.dst.max_allowed_packet();
  size_t bytes = 0;
  for (size_t r : rows) {
    // On the wire, per value: an indicator byte, a length of up to 9 bytes and the bytes.
    size_t row = 0;
    for (size_t c = 0; c < m.columns.size(); ++c) row += 10 + (tb.rows.is_null(r, c) ? 0 : tb.rows.cell(r, c).size());
    check_row_size(m, tb, r, row, limit);
    if (out.empty() || bytes + row > budget) {
      out.push_back(Statement{sql, {}, {}, true});
      bytes = 0;
    }
    bytes += row;
    out.back().rows.push_back(r);
  }
  return out;
}

std::vector<Statement> DestinationWriter::build_loads(const Batch& batch, size_t t,
                                                      const std::vector<size_t>& rows) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  std::vector<Statement> out;
  // CHARACTER SET utf8mb4: the text is what the server sent on this utf8mb4 connection (converted to each
  // column's character set as an INSERT's literals are); binary columns take the bytes unconverted.
  const std::string head = fmt::format(
      "LOAD DATA LOCAL INFILE 'goarchive' INTO TABLE {} CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' "
      "ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' ({})",
      m.destination_name, m.insert_list);
  const size_t budget = statement_budget(m_ctx.dst);
  const size_t limit = m_ctx.dst.max_allowed_packet();
  std::string line;
  for (size_t r : rows) {
    line.clear();
    for (size_t c = 0; c < m.columns.size(); ++c) {
      if (c) line += '\t';
      append_load_field(line, tb.rows, r, c);
    }
    line += '\n';
    check_row_size(m, tb, r, line.size(), limit);
    if (out.empty() || out.back().data.size() + line.size() > budget) {
      out.push_back(Statement{head, {}, {}, false});
      out.back().data.reserve(std::min<size_t>(budget + 4096, 1 << 20));
    }
    out.back().data += line;
    out.back().rows.push_back(r);
  }
  return out;
}

void DestinationWriter::run_load(Batch& batch, size_t t, const Statement& st) {
  db::Connection& dst = m_ctx.dst;
  dst.execute("SAVEPOINT goarchive_copy");
  uint64_t n = 0;
  try {
    n = dst.load_data_local(st.sql, st.data);
  } catch (const db::DbError& e) {
    if (value_refused(e.code()) || e.code() == k_fk_refused) {  // the INSERT path settles these
      dst.execute("ROLLBACK TO SAVEPOINT goarchive_copy");
      run_inserts(batch, t, build_inserts(batch, t, st.rows));
      return;
    }
    if (!load_refused(e)) throw;
    if (m_load.exchange(false)) {
      spdlog::info("the destination refuses LOAD DATA LOCAL ({}); copying with INSERT statements", e.what());
    }
    run_inserts(batch, t, build_inserts(batch, t, st.rows));
    return;
  }
  if (n == st.rows.size() && dst.warning_count() == 0) {
    batch.copied[t] += n;
    return;
  }
  spdlog::debug("batch {}: LOAD DATA of {} rows into {} inserted {} with {} warning(s); copying them with INSERT",
                batch.no, st.rows.size(), m_ctx.tables[t].node.table, n, dst.warning_count());
  dst.execute("ROLLBACK TO SAVEPOINT goarchive_copy");
  run_inserts(batch, t, build_inserts(batch, t, st.rows));
}

void DestinationWriter::run_bulk(Batch& batch, size_t t, const Statement& st) {
  db::Connection& dst = m_ctx.dst;
  dst.execute("SAVEPOINT goarchive_copy");
  db::Connection::BulkResult got;
  try {
    got = dst.bulk_insert(st.sql, batch.tables[t].rows, st.rows, m_ctx.tables[t].binary);
  } catch (const db::DbError& e) {
    if (e.retryable() || e.connection_lost()) throw;
    // A server error (a duplicate key, a value refused) is for the paths below to settle; a client one (2000 and
    // up) says the command itself is not taken here.
    if (e.code() >= 2000 && m_bulk.exchange(false)) {
      spdlog::info("the destination refuses bulk INSERT ({}); copying with LOAD DATA LOCAL or INSERT", e.what());
    }
    spdlog::debug("batch {}: bulk INSERT into {} failed ({}); copying those rows again", batch.no,
                  m_ctx.tables[t].node.table, e.what());
    got = {};
  }
  if (got.rows == st.rows.size() && got.warnings == 0) {
    batch.copied[t] += got.rows;
    return;
  }
  if (got.rows || got.warnings) {
    spdlog::debug("batch {}: bulk INSERT of {} rows into {} inserted {} with {} warning(s); copying them again",
                  batch.no, st.rows.size(), m_ctx.tables[t].node.table, got.rows, got.warnings);
  }
  dst.execute("ROLLBACK TO SAVEPOINT goarchive_copy");
  run_inserts(batch, t, build_fallback(batch, t, st.rows));
}

void DestinationWriter::run_inserts(Batch& batch, size_t t, const std::vector<Statement>& statements) {
  for (const auto& st : statements) {
    if (st.bulk) {
      run_bulk(batch, t, st);
      continue;
    }
    if (!st.data.empty()) {
      run_load(batch, t, st);
      continue;
    }
    try {
      m_ctx.dst.execute(st.sql);
      batch.copied[t] += st.rows.size();
    } catch (const db::DbError& e) {
      if (value_refused(e.code())) {
        insert_permissive(batch, t, st);
        continue;
      }
      if (e.code() == k_fk_refused && m_ctx.restores()) missing_parent(batch, t, st.rows);
      // A duplicate key is an answer (seed 000, I4): find out whose row is there.
      if (!e.duplicate_key()) throw;
      insert_fallback(batch, t, st.rows);
    }
  }
}

void DestinationWriter::insert_permissive(Batch& batch, size_t t, const Statement& st) {
  db::Connection& dst = m_ctx.dst;
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  dst.execute(fmt::format("SET SESSION sql_mode = '{}'", db::k_copy_sql_mode));
  try {
    dst.execute(st.sql);
  } catch (const db::DbError& e) {
    dst.execute(fmt::format("SET SESSION sql_mode = '{}'", db::k_session_sql_mode));
    if (!e.duplicate_key()) throw;
    insert_fallback(batch, t, st.rows);
    return;
  }
  dst.execute(fmt::format("SET SESSION sql_mode = '{}'", db::k_session_sql_mode));
  std::map<std::string, size_t> there;
  db::RowSet back = read_by_key(t, tb.rows, st.rows);
  for (size_t r = 0; r < back.rows(); ++r) there[encode_values(back, r, m.key_idx)] = r;
  for (size_t r : st.rows) {
    auto it = there.find(tb.key[r]);
    if (it == there.end() || !same_row(back, it->second, tb.rows, r)) {
      throw RootStays(fmt::format("the row {} holds a value the destination cannot store exactly", name_row(m, tb.rows, r)),
                      tb.root[r]);
    }
  }
  spdlog::info("batch {}: {} row(s) of {} hold values strict mode refuses (zero or invalid dates, an ENUM's '' "
               "member); copied as they are and compared byte for byte",
               batch.no, st.rows.size(), m.node.table);
  batch.copied[t] += st.rows.size();
}

void DestinationWriter::unique_key_clash(const Batch& batch, size_t t, const std::vector<size_t>& rows) {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  for (size_t r : rows) {
    try {
      m_ctx.dst.execute("SAVEPOINT goarchive_clash");
      for (const auto& one : build_inserts(batch, t, {r})) m_ctx.dst.execute(one.sql);
      m_ctx.dst.execute("ROLLBACK TO SAVEPOINT goarchive_clash");
    } catch (const db::DbError& e) {
      if (!e.duplicate_key()) throw;
      if (m_ctx.restores()) {
        throw RootStays(fmt::format("the row {} holds a value of a unique key that a source row holds already ({}); "
                                    "goarchive never overwrites a source row",
                                    name_row(m, tb.rows, r), e.what()),
                        tb.root[r]);
      }
      throw RootStays(fmt::format("the row {} holds a value of a unique key that another archived row holds ({}); "
                                  "make that key a plain index on the archive (goarchive schema does)",
                                  name_row(m, tb.rows, r), e.what()),
                      tb.root[r]);
    }
  }
  throw Error(fmt::format("table {}: INSERT reported a duplicate key but no single row of it meets one; check the "
                          "destination's unique keys",
                          m.node.table));
}

void DestinationWriter::missing_parent(const Batch& batch, size_t t, const std::vector<size_t>& rows) {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  for (size_t r : rows) {
    try {
      m_ctx.dst.execute("SAVEPOINT goarchive_parent");
      for (const auto& one : build_inserts(batch, t, {r})) m_ctx.dst.execute(one.sql);
      m_ctx.dst.execute("ROLLBACK TO SAVEPOINT goarchive_parent");
    } catch (const db::DbError& e) {
      if (e.code() != k_fk_refused) throw;
      throw RootStays(fmt::format("the row {} cannot go back: a parent it references is not in the source ({})",
                                  name_row(m, tb.rows, r), e.what()),
                      tb.root[r]);
    }
  }
  throw Error(fmt::format("table {}: a foreign key of the source refused rows, but no single row of them is refused; "
                          "nothing of this batch was restored",
                          m.node.table));
}

void DestinationWriter::insert_fallback(Batch& batch, size_t t, const std::vector<size_t>& rows) {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  std::vector<size_t> missing;
  bool removed_stale = false;
  // A stale copy-only copy removed for one row takes its whole tree with it, other rows of this list among
  // them: the destination is read again after each removal, so that no row is judged against a deleted copy.
  for (bool again = true; again;) {
    again = false;
    missing.clear();
    std::map<std::string, size_t> there;
    db::RowSet existing = read_by_key(t, tb.rows, rows);
    for (size_t r = 0; r < existing.rows(); ++r) there[encode_values(existing, r, m.key_idx)] = r;
    for (size_t r : rows) {
      auto it = there.find(tb.key[r]);
      if (it == there.end()) {
        missing.push_back(r);
      } else if (same_row(existing, it->second, tb.rows, r)) {
        // Another run wrote it (another job, mode, registry or source, or an earlier run whose source row came
        // back): it is that run's, which may remove it. A delete resting on it could lose the row, so the root stays.
        if (m_ctx.restores()) {
          throw SameRowThere(fmt::format("the row {} is in the source already, with the same content", name_row(m, tb.rows, r)),
                             tb.root[r]);
        }
        throw RootStays(fmt::format("the row {} is already in the destination, written by another run; goarchive "
                                    "deletes a source row only on a copy it wrote itself",
                                    name_row(m, tb.rows, r)),
                        tb.root[r]);
      } else if (remove_stale_copy_of(t, existing, it->second)) {
        removed_stale = again = true;  // its stale copy is gone: the current version goes in
        break;
      } else {
        if (m_ctx.restores()) {
          throw RootStays(fmt::format("the key of the row {} is in the source already, with other content; goarchive "
                                      "never overwrites a source row",
                                      name_row(m, tb.rows, r)),
                          tb.root[r]);
        }
        throw RowConflict(fmt::format("the row {} is already in the destination with different content; goarchive "
                                      "never overwrites an archived row",
                                      name_row(m, tb.rows, r)),
                          tb.root[r]);
      }
    }
  }
  if (missing.size() == rows.size() && !removed_stale) unique_key_clash(batch, t, rows);
  if (!missing.empty()) run_inserts(batch, t, build_inserts(batch, t, missing));
}

db::RowSet DestinationWriter::read_by_key(size_t t, const db::RowSet& rows, const std::vector<size_t>& which) {
  const TableMeta& m = m_ctx.tables[t];
  db::RowSet found;
  found.set_columns(m.columns);
  for (const auto& list : primary_key_lists(m, rows, which, statement_budget(m_ctx.dst))) {
    db::RowSet part = m_ctx.dst.query(fmt::format("SELECT {} FROM {}{} WHERE {}", m.select_list, m.destination_name,
                                                  m_ctx.indexes.hint(m_ctx.dst, m.destination_name, m.key_cols), list));
    for (size_t r = 0; r < part.rows(); ++r) append_row(found, part, r);
  }
  return found;
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
    std::vector<std::string> referenced;
    for (size_t k = 0; k < m.fk_idx.size(); ++k) {
      referenced.push_back(pm.columns[m.parent_ref_idx[k]]);
      cond += (k ? " AND " : "") + sql::ident(pm.columns[m.parent_ref_idx[k]]) + " = " +
              sql::literal(row.get(at, m.fk_idx[k]), m.fk_binary[k]);
    }
    row = m_ctx.dst.query(fmt::format("SELECT {} FROM {}{} WHERE {} LIMIT 1", pm.select_list, pm.destination_name,
                                      m_ctx.indexes.hint(m_ctx.dst, pm.destination_name, referenced), cond));
    if (row.rows() == 0) return std::nullopt;
    at = 0;
    t = static_cast<size_t>(m.node.parent);
  }
  std::vector<std::string> key;
  for (size_t i : m_ctx.root().key_idx) key.push_back(row.text(at, i));
  return key;
}

bool DestinationWriter::remove_stale_copy_of(size_t t, const db::RowSet& rows, size_t r) {
  if (m_ctx.mode == Mode::purge || m_ctx.restores()) return false;  // restore: the destination is the source
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
    const size_t t = static_cast<size_t>(ni);
    try {
      run_inserts(batch, t, batch.tables[t].inserts);
    } catch (const db::DbError& e) {
      // An INSERT raises it (MySQL 3105, MariaDB 1906). MariaDB's bulk INSERT and LOAD DATA drop such a value
      // silently (measured on 10.11.19): the byte-exact verification then fails the batch.
      if (e.code() != m_ctx.dst.dialect().generated_write_error()) throw;
      throw Error(generated_column_written(batch, t, e));
    }
  }
}

std::string DestinationWriter::generated_column_written(const Batch& batch, size_t t, const db::DbError& e) {
  const TableMeta& m = m_ctx.tables[t];
  std::vector<std::string> generated;
  try {
    // SHOW COLUMNS: Field (0) and Extra (5), as information_schema.COLUMNS names them on both servers.
    db::RowSet cols = m_ctx.dst.query("SHOW COLUMNS FROM " + m.destination_name);
    for (size_t r = 0; r < cols.rows(); ++r) {
      const std::string field = cols.text(r, 0);
      bool copied = std::any_of(m.columns.begin(), m.columns.end(),
                                [&](const std::string& c) { return ascii_lower(c) == ascii_lower(field); });
      if (copied && db::Dialect::column_generated(cols.text(r, 5))) generated.push_back(field);
    }
  } catch (const db::DbError& again) {
    spdlog::debug("the columns of {} could not be read ({})", m.destination_name, again.what());
  }
  const char* from = m_ctx.restores() ? "archive" : "source";
  std::string which = generated.empty()
                          ? "a column of it is generated there"
                          : fmt::format("column{} {} of it {} generated there", generated.size() == 1 ? "" : "s",
                                        join(generated, ", "), generated.size() == 1 ? "is" : "are");
  std::string fix = generated.empty() ? "ALTER TABLE " + m.destination_name + " DROP COLUMN <column>, ADD COLUMN <column> <type>"
                                      : "ALTER TABLE " + m.destination_name + " DROP COLUMN " + sql::ident(generated[0]) +
                                            ", ADD COLUMN " + sql::ident(generated[0]) + " <the " + from + "'s type>";
  return fmt::format("batch {}: the copy into {} was refused: {}, but the {} stores it as data ({}); goarchive copies "
                     "every stored column and never writes a generated one. Make it a stored column of the {}'s type "
                     "({}), then run again; nothing of this batch was copied",
                     batch.no, m.destination_name, which, from, e.what(), from, fix);
}

bool DestinationWriter::fk_indexed(size_t t) {
  if (m_fk_indexed.size() != m_ctx.tables.size()) m_fk_indexed.assign(m_ctx.tables.size(), -1);
  if (m_fk_indexed[t] >= 0) return m_fk_indexed[t] == 1;
  const TableMeta& m = m_ctx.tables[t];
  // SHOW INDEX: Key_name (2), Seq_in_index (3), Column_name (4), in index order.
  db::RowSet idx = m_ctx.dst.query("SHOW INDEX FROM " + m.destination_name);
  std::map<std::string, std::vector<std::string>> columns;
  for (size_t r = 0; r < idx.rows(); ++r) {
    std::string col = idx.text(r, 4);
    std::transform(col.begin(), col.end(), col.begin(), [](unsigned char c) { return std::tolower(c); });
    columns[idx.text(r, 2)].push_back(col);
  }
  std::set<std::string> fk;
  for (std::string c : m.node.foreign_key) {
    std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
    fk.insert(c);
  }
  bool found = false;
  for (const auto& [name, cols] : columns) {
    if (cols.size() >= fk.size() && std::set<std::string>(cols.begin(), cols.begin() + static_cast<long>(fk.size())) == fk) {
      found = true;
    }
  }
  m_fk_indexed[t] = found ? 1 : 0;
  return found;
}

// sha256 reads a child table back through its parent rows' referenced values when the destination indexes its
// foreign key: one range per parent instead of one lookup per primary key, several times faster for composite
// keys (a multi-column IN list is slow to parse and plan). The answer may hold rows of other batches under the
// same parents; they are not in this batch and are skipped, and every copied row must still be found
// byte-equal, so the check is the same. count mode counts by primary key (a count through the parents would
// include those other rows).
std::vector<std::string> DestinationWriter::verify_lists(const Batch& batch, size_t t) {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  // A table with further parents (a diamond) has rows found through any of them: read back by primary key.
  if (!m_ctx.sha256() || m.node.parent < 0 || !m.node.also.empty() || m.collated_fk || tb.size() == 0 ||
      !fk_indexed(t)) {
    return tb.key_lists;  // by primary key, ranges where exact (prebuild)
  }
  const TableRows& parent = batch.tables[static_cast<size_t>(m.node.parent)];
  std::set<std::string> seen;
  std::vector<sql::KeyLiterals> values;
  std::vector<std::string> plain;  // the same values as text, when the foreign key is one column
  for (size_t r = 0; r < parent.size(); ++r) {
    if (any_null(parent.rows, r, m.parent_ref_idx)) continue;
    if (seen.insert(encode_values(parent.rows, r, m.parent_ref_idx)).second) {
      values.push_back(wrap(literals(parent.rows, r, m.parent_ref_idx, m.fk_binary, m.fk_integer), m.fk_wrap));
      if (m.fk_idx.size() == 1) plain.push_back(parent.rows.text(r, m.parent_ref_idx[0]));
    }
  }
  if (m.fk_idx.size() == 1) {
    if (auto range = run_range(m.node.foreign_key[0], m.integer[m.fk_idx[0]], plain)) return {*range};
  }
  return key_lists(m.node.foreign_key, values, statement_budget(m_ctx.dst));
}

// A root table's batch is one stretch of the keyset, so on the destination its key range usually holds the
// batch's rows alone: one range read replaces a lookup per key, which for string keys (a UUID, a natural key)
// costs the server over twice as much. Rows of other batches in the range (earlier runs, another where) are
// skipped; the read is capped, and every batch row it does not return is read by its exact key, so every copied
// row is still compared once. Integer keys have their exact ranges already (prebuild).
std::optional<std::vector<std::string>> DestinationWriter::verify_root_range(const Batch& batch, size_t t,
                                                                             size_t& found) {
  if (!reads_root_range(batch, t)) return std::nullopt;
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  // The range of the key's first column, from the batch's first row to its last (the keyset read's order), walked
  // on the primary key in key order: rows of other batches in it are skipped, and a batch whose rows are not in
  // that order (or a range cut by the LIMIT) leaves the rows it misses to the exact-key lists below.
  const size_t k = m.key_idx[0];
  const std::string column = sql::ident(m.key_cols[0]);
  db::RowSet there = m_ctx.dst.query(fmt::format(
      "SELECT {} FROM {}{} WHERE {} >= {} AND {} <= {} ORDER BY {} LIMIT {}", m.select_list, m.destination_name,
      m_ctx.indexes.hint(m_ctx.dst, m.destination_name, m.key_cols), column,
      sql::literal(tb.rows.get(0, k), m.binary[k], m.integer[k]), column,
      sql::literal(tb.rows.get(tb.size() - 1, k), m.binary[k], m.integer[k]), sql::ident_list(m.key_cols),
      2 * tb.size() + 16));
  std::vector<bool> seen(tb.size(), false);
  compare_read_back(batch, t, there, found, &seen);
  std::vector<size_t> rest;
  for (size_t r = 0; r < tb.size(); ++r) {
    if (!seen[r]) rest.push_back(r);
  }
  return primary_key_where(m, tb, rest, statement_budget(m_ctx.dst));
}

bool DestinationWriter::reads_root_range(const Batch& batch, size_t t) const {
  const TableMeta& m = m_ctx.tables[t];
  // A key of integer columns only is read back by exact ranges already (primary_key_where).
  return m_ctx.sha256() && t == 0 && !all_integer(m) && batch.tables[t].size() >= 2;
}

void DestinationWriter::compare_read_back(const Batch& batch, size_t t, const db::RowSet& there, size_t& found,
                                          std::vector<bool>* seen) const {
  const TableMeta& m = m_ctx.tables[t];
  const TableRows& tb = batch.tables[t];
  for (size_t r = 0; r < there.rows(); ++r) {
    auto at = tb.find(encode_values(there, r, m.key_idx));
    if (!at) continue;
    // Byte for byte against the row as the source sent it: what comparing SHA-256 digests of the two rows would
    // establish, without hashing either (and with no collision to rule out).
    if (!same_row(there, r, tb.rows, *at)) {
      throw Error(fmt::format("verification (sha256) failed: the destination row {} differs from the source; "
                              "nothing was deleted. Inspect both rows; the rerun resumes this batch",
                              name_row(m, there, r)));
    }
    if (seen) (*seen)[*at] = true;
    ++found;
  }
}

// Reads the batch back inside the copy transaction (its own writes) and compares it with the source: a batch
// that fails verification rolls back whole, so nothing unverified is ever marked for deletion.
void DestinationWriter::verify(Batch& batch) {
  batch.verified.assign(m_ctx.tables.size(), 0);
  if (m_ctx.job.processing.verification == config::VerifyMethod::none) return;
  auto t0 = std::chrono::steady_clock::now();
  for (int ni : m_ctx.copy_order) {
    const size_t t = static_cast<size_t>(ni);
    const TableMeta& m = m_ctx.tables[t];
    const TableRows& tb = batch.tables[t];
    size_t found = 0;
    std::optional<std::vector<std::string>> lists = verify_root_range(batch, t, found);
    if (!lists) lists = verify_lists(batch, t);
    // The lists are by primary key or by foreign key (verify_lists): the hint names both indexes, and the
    // optimizer takes the one the list is on, never a scan of a table whose statistics lag (key_index.h).
    const std::string hint = m_ctx.indexes.hint(m_ctx.dst, m.destination_name, m.key_cols, m.node.foreign_key);
    for (const std::string& where : *lists) {
      if (!m_ctx.sha256()) {
        found += std::stoull(m_ctx.dst.scalar(fmt::format("SELECT COUNT(*) FROM {}{} WHERE {}", m.destination_name,
                                                          hint, where)).value_or("0"));
        continue;
      }
      compare_read_back(batch, t, m_ctx.dst.query(fmt::format("SELECT {} FROM {}{} WHERE {}", m.select_list,
                                                              m.destination_name, hint, where)),
                        found, nullptr);
    }
    if (found != tb.size()) {
      throw Error(fmt::format("verification ({}) failed for table {}: {} rows copied but {} found in the destination; "
                              "nothing was deleted. The rerun resumes this batch",
                              config::to_string(m_ctx.job.processing.verification), m.node.table, tb.size(), found));
    }
    batch.verified[t] += found;
  }
  m_ctx.stats.t_verify += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t DestinationWriter::delete_by_key(const TableMeta& m, const db::RowSet& rows, const std::vector<size_t>& which) {
  size_t removed = 0;
  // Through a join on the key's index: a single-table DELETE takes no index hint, and the archive's statistics
  // may say it is nearly empty (key_index.h).
  for (const auto& from :
       m_ctx.indexes.joins(m_ctx.dst, m.destination_name, m.key_cols, primary_keys(m, rows, which))) {
    removed += m_ctx.dst.execute("DELETE " + m.destination_name + " FROM " + from);
  }
  return removed;
}

size_t DestinationWriter::remove_rows(const Batch& batch, const std::vector<std::vector<size_t>>& which) {
  size_t removed = 0;
  for (int ni : m_ctx.delete_order) {
    const size_t t = static_cast<size_t>(ni);
    if (!which[t].empty()) removed += delete_by_key(m_ctx.tables[t], batch.tables[t].rows, which[t]);
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
  if (removed > 0) {
    spdlog::info("batch {}: removed the earlier destination copy of {} root(s) ({} rows)", batch.no, roots.size(),
                 removed);
  }
  return removed;
}

}  // namespace goarchive::pipeline

#include "tracking/registry.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "db/parallel.h"
#include "plan/sql.h"
#include "tracking/migrations.h"
#include "tracking/registry_text.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::tracking {

RootKey encode_key(const std::vector<std::string>& values) {
  RootKey k;
  for (const auto& v : values) {
    auto n = static_cast<uint32_t>(v.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                   static_cast<char>(n)};
    k.encoded.append(len, 4);
    k.encoded.append(v);
  }
  k.hash = sha256(k.encoded).substr(0, 16);
  return k;
}

std::vector<std::string> decode_key(const std::string& encoded) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos + 4 <= encoded.size()) {
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(encoded[pos + i])); };
    uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    pos += 4;
    if (pos + n > encoded.size()) throw Error("corrupt root key in the tracking log");
    out.push_back(encoded.substr(pos, n));
    pos += n;
  }
  return out;
}

using namespace detail;


std::string Registry::table(const char* name) const { return sql::qualified(m_schema, name); }

bool Registry::ready(db::Connection& conn) const {
  try {
    auto v = conn.scalar("SELECT MAX(version) FROM " + table("schema_version"));
    return v && std::stoi(*v) >= migrations().back().version;
  } catch (const db::DbError& e) {
    if (e.code() == 1146 || e.code() == 1049) return false;
    throw;
  }
}

void Registry::create(db::Connection& conn, const db::Opener& open) const {
  conn.execute("CREATE DATABASE IF NOT EXISTS " + sql::ident(m_schema) +
               " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
  int current = 0;
  try {
    if (auto v = conn.scalar("SELECT MAX(version) FROM " + table("schema_version"))) current = std::stoi(*v);
  } catch (const db::DbError& e) {
    if (e.code() != 1146) throw;
  }
  for (const Migration& m : migrations()) {
    if (m.version <= current) continue;
    std::string text = m.sql;
    std::string quoted = sql::ident(m_schema);
    for (size_t pos = 0; (pos = text.find("{schema}", pos)) != std::string::npos; pos += quoted.size()) {
      text.replace(pos, 8, quoted);
    }
    // Statements are separated by a ';' at the end of a line.
    std::vector<std::string> statements;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(";\n", start);
      std::string stmt = trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      // Drop leading comment lines.
      while (stmt.rfind("--", 0) == 0) {
        auto nl = stmt.find('\n');
        stmt = nl == std::string::npos ? "" : trim(stmt.substr(nl + 1));
      }
      if (!stmt.empty()) statements.push_back(std::move(stmt));
      if (end == std::string::npos) break;
      start = end + 2;
    }
    // A migration of new tables only creates them side by side (they are independent); any other runs in order.
    bool only_tables = std::all_of(statements.begin(), statements.end(),
                                   [](const std::string& st) { return st.rfind("CREATE TABLE IF NOT EXISTS ", 0) == 0; });
    // A run that died inside a migration left part of it applied: an existing column, index or table is an
    // answer (DDL commits on its own, so the migration is re-applied statement by statement).
    db::execute_all(conn, statements, only_tables ? open : db::Opener{}, 3,
                    [](const db::DbError& e) { return e.code() == 1060 || e.code() == 1061 || e.code() == 1050; });
    conn.execute(fmt::format("INSERT INTO {} (version, file) VALUES ({}, {})", table("schema_version"), m.version,
                             sql::quote(m.file)));
    spdlog::info("tracking schema {}: applied {}", m_schema, m.file);
  }
}

std::string pack_keys(const std::vector<RootKey>& keys) {
  std::string out;
  for (const auto& k : keys) {
    auto n = static_cast<uint32_t>(k.encoded.size());
    char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                   static_cast<char>(n)};
    out.append(len, 4);
    out += k.encoded;
  }
  return out;
}

std::vector<std::string> unpack_keys(const std::string& blob) { return decode_key(blob); }

unsigned long long Registry::claim_batch(db::Connection& conn, unsigned long long job_id, unsigned long long run_id,
                                         unsigned batch_no, const std::string& scope, const std::vector<RootKey>& keys,
                                         const std::string& state) const {
  // The guarded write first: bump the scope's version, which holds its row until this transaction ends, so
  // that claimers of one scope serialize and each sees the batches committed before it. Affected rows 0: the
  // scope has no row yet; create it (a duplicate key is an answer: another run just did) and bump again.
  std::string bump = fmt::format("UPDATE {} SET version = version + 1, updated_at = NOW(6) WHERE scope = {}",
                                 table("claim_scopes"), sql::quote(scope));
  if (conn.execute(bump) != 1) {
    try {
      conn.execute(fmt::format("INSERT INTO {} (scope) VALUES ({})", table("claim_scopes"), sql::quote(scope)));
    } catch (const db::DbError& e) {
      if (!e.duplicate_key()) throw;
    }
    uint64_t n = conn.execute(bump);
    if (n != 1) preempted("claiming a batch (the claim scope's row)", n, 1);
  }
  // Unfinished batches of other jobs on the same root table: none, unless the locks were bypassed.
  db::RowSet others = conn.query(fmt::format(
      "SELECT k.root_keys, j.name FROM {} b JOIN {} j ON j.id = b.job_id JOIN {} k ON k.batch_id = b.id "
      "WHERE b.scope = {} AND b.unfinished = 1 AND b.job_id <> {}",
      table("batches"), table("jobs"), table("batch_keys"), sql::quote(scope), job_id));
  if (others.rows() > 0) {
    std::set<std::string> mine;
    for (const auto& k : keys) mine.insert(k.encoded);
    for (size_t i = 0; i < others.rows(); ++i) {
      for (const auto& k : unpack_keys(others.text(i, 0))) {
        if (mine.count(k)) {
          throw Error(fmt::format("a root of this batch is already claimed as unfinished work by job \"{}\" in the "
                                  "tracking registry {} (no double claiming); rerun that job so its recovery "
                                  "finishes its work",
                                  others.text(i, 1), m_schema));
        }
      }
    }
  }
  conn.execute(fmt::format("INSERT INTO {} (job_id, run_id, batch_no, scope, state, roots) VALUES ({}, {}, {}, {}, "
                           "{}, {})",
                           table("batches"), job_id, run_id, batch_no, sql::quote(scope), sql::quote(state),
                           keys.size()));
  unsigned long long batch_id = conn.last_insert_id();
  conn.execute(fmt::format("INSERT INTO {} (batch_id, root_keys) VALUES ({}, {})", table("batch_keys"), batch_id,
                           sql::hex_literal(pack_keys(keys))));
  return batch_id;
}

unsigned Registry::adopt(db::Connection& conn, unsigned long long batch_id, unsigned long long run_id,
                         unsigned batch_no, unsigned version) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET run_id = {}, batch_no = {}, version = version + 1, updated_at = NOW(6) "
      "WHERE id = {} AND version = {} AND state IN ('copied', 'deleting')",
      table("batches"), run_id, batch_no, batch_id, version));
  if (n != 1) preempted("adopting an unfinished batch", n, 1);
  return version + 1;
}

unsigned Registry::transition(db::Connection& conn, unsigned long long batch_id, const std::vector<std::string>& from,
                              const std::string& to, unsigned version, unsigned changed) const {
  uint64_t n = conn.execute(fmt::format(
      "UPDATE {} SET state = {}, changed = {}, version = version + 1, updated_at = NOW(6) WHERE id = {} AND "
      "version = {} AND state IN ({})",
      table("batches"), sql::quote(to), changed, batch_id, version, in_list(from)));
  if (n != 1) preempted(fmt::format("marking batch {} {}", batch_id, to), n, 1);
  return version + 1;
}

void Registry::mark_roots(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes,
                          const std::string& state, const std::vector<std::string>* keys) const {
  if (hashes.empty()) return;
  std::string values, key_values;
  for (size_t i = 0; i < hashes.size(); ++i) {
    values += fmt::format("{}({},{},{})", i ? "," : "", job_id, sql::hex_literal(hashes[i]), sql::quote(state));
    if (keys) key_values += fmt::format("{}({},{},{})", i ? "," : "", job_id, sql::hex_literal(hashes[i]),
                                        sql::hex_literal((*keys)[i]));
  }
  // A duplicate key is an answer: the root already has a mark, which now says `state`.
  conn.execute(fmt::format("INSERT INTO {} (job_id, root_key_hash, state) VALUES {} ON DUPLICATE KEY UPDATE "
                           "state = VALUES(state), updated_at = NOW(6)",
                           table("root_marks"), values));
  if (keys) {
    conn.execute(fmt::format("INSERT INTO {} (job_id, root_key_hash, root_key) VALUES {} ON DUPLICATE KEY UPDATE "
                             "root_key = VALUES(root_key)",
                             table("root_mark_keys"), key_values));
  }
}

std::vector<std::string> Registry::marked(db::Connection& conn, unsigned long long job_id,
                                          const std::vector<std::string>& hashes, const std::string& state) const {
  std::vector<std::string> out;
  if (hashes.empty()) return out;
  db::RowSet r = conn.query(fmt::format("SELECT root_key_hash FROM {} WHERE job_id = {} AND root_key_hash IN ({}) AND "
                                        "state = {}",
                                        table("root_marks"), job_id, hex_list(hashes), sql::quote(state)));
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

unsigned long long Registry::count_marked(db::Connection& conn, unsigned long long job_id,
                                          const std::string& state) const {
  return std::stoull(conn.scalar(fmt::format("SELECT COUNT(*) FROM {} WHERE job_id = {} AND state = {}",
                                             table("root_marks"), job_id, sql::quote(state)))
                         .value_or("0"));
}

void Registry::unmark(db::Connection& conn, unsigned long long job_id, const std::vector<std::string>& hashes) const {
  if (hashes.empty()) return;
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {} AND root_key_hash IN ({})", table("root_marks"), job_id,
                           hex_list(hashes)));
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {} AND root_key_hash IN ({})", table("root_mark_keys"),
                           job_id, hex_list(hashes)));
}

std::string Registry::scope_filter(const char* alias) const {
  if (m_scope.empty()) return "";
  return fmt::format(" AND {}scope = {}", alias, sql::quote(m_scope));
}

std::vector<BatchRow> Registry::unfinished_batches(db::Connection& conn, unsigned long long job_id,
                                                   unsigned long long after_id, size_t limit) const {
  db::RowSet r = conn.query(fmt::format(
      "SELECT b.id, b.state, b.version, k.root_keys FROM {} b JOIN {} k ON k.batch_id = b.id WHERE b.job_id = {} "
      "AND b.unfinished = 1{} AND b.id > {} ORDER BY b.id LIMIT {}",
      table("batches"), table("batch_keys"), job_id, scope_filter("b."), after_id, limit));
  std::vector<BatchRow> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    out.push_back(BatchRow{std::stoull(r.text(i, 0)), r.text(i, 1), static_cast<unsigned>(std::stoul(r.text(i, 2))),
                           unpack_keys(r.text(i, 3))});
  }
  return out;
}

std::vector<std::string> Registry::unfinished_commands(db::Connection& conn, unsigned long long job_id) const {
  db::RowSet r = conn.query(fmt::format("SELECT DISTINCT r.command FROM {} b JOIN {} r ON r.id = b.run_id "
                                        "WHERE b.job_id = {} AND b.unfinished = 1{} ORDER BY r.command",
                                        table("batches"), table("runs"), job_id, scope_filter("b.")));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

std::pair<unsigned long long, unsigned long long> Registry::unfinished_counts(db::Connection& conn,
                                                                              unsigned long long job_id) const {
  db::RowSet r = conn.query(fmt::format("SELECT IFNULL(SUM(IF(state = 'copied', roots, 0)), 0), "
                                        "IFNULL(SUM(IF(state = 'deleting', roots, 0)), 0) FROM {} "
                                        "WHERE job_id = {} AND unfinished = 1{}",
                                        table("batches"), job_id, scope_filter("")));
  return {std::stoull(r.text(0, 0)), std::stoull(r.text(0, 1))};
}

unsigned long long Registry::prune(db::Connection& conn, unsigned long long job_id, double retention_days) const {
  unsigned long long total = 0;
  for (int round = 0; round < 1000; ++round) {
    db::RowSet ids = conn.query(fmt::format(
        "SELECT id FROM {} WHERE job_id = {} AND state = 'done' AND updated_at < NOW(6) - INTERVAL {} SECOND "
        "LIMIT 1000",
        table("batches"), job_id, static_cast<long long>(retention_days * 86400)));
    if (ids.rows() == 0) break;
    std::string list;
    for (size_t i = 0; i < ids.rows(); ++i) list += (i ? "," : "") + ids.text(i, 0);
    db::Transaction tx(conn);
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id IN ({})", table("batch_keys"), list));
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id IN ({})", table("batch_stayed"), list));
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id IN ({})", table("batch_proofs"), list));
    total += conn.execute(fmt::format("DELETE FROM {} WHERE id IN ({}) AND state = 'done'", table("batches"), list));
    tx.commit();
    if (ids.rows() < 1000) break;
  }
  return total;
}

}  // namespace goarchive::tracking

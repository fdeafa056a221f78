// Registry: what a batch's delete decided (batch_stayed), the token that proves its commit (batch_proofs) and the
// conflicts that wait for a person (tracking_schema/002_fates_and_conflicts.sql, 004_commit_proofs.sql). Plain writes and reads; the callers own the transactions.
#include <fmt/format.h>

#include "plan/sql.h"
#include "tracking/registry.h"

namespace goarchive::tracking {

void Registry::record_stayed(db::Connection& conn, unsigned long long batch_id, const std::vector<RootKey>& keys) const {
  // The decision replaces any earlier one of the batch: a recovered batch whose earlier, rolled-back delete kept
  // roots may keep none now, and a recovery of this delete must not take those roots for kept.
  if (keys.empty()) {
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id = {}", table("batch_stayed"), batch_id));
    return;
  }
  // A duplicate key is an answer: a retried move to deleting records its decision over the earlier one.
  conn.execute(fmt::format("INSERT INTO {} (batch_id, root_keys) VALUES ({}, {}) ON DUPLICATE KEY UPDATE "
                           "root_keys = VALUES(root_keys)",
                           table("batch_stayed"), batch_id, sql::hex_literal(pack_keys(keys))));
}

void Registry::record_proof(db::Connection& conn, unsigned long long batch_id, const std::string& token) const {
  if (token.empty()) {
    conn.execute(fmt::format("DELETE FROM {} WHERE batch_id = {}", table("batch_proofs"), batch_id));
    return;
  }
  conn.execute(fmt::format("INSERT INTO {} (batch_id, token) VALUES ({}, {}) ON DUPLICATE KEY UPDATE token = "
                           "VALUES(token)",
                           table("batch_proofs"), batch_id, sql::hex_literal(token)));
}

std::string Registry::proof(db::Connection& conn, unsigned long long batch_id) const {
  return conn.scalar(fmt::format("SELECT token FROM {} WHERE batch_id = {}", table("batch_proofs"), batch_id))
      .value_or("");
}

std::vector<std::string> Registry::stayed(db::Connection& conn, unsigned long long batch_id) const {
  auto blob = conn.scalar(fmt::format("SELECT root_keys FROM {} WHERE batch_id = {}", table("batch_stayed"), batch_id));
  if (!blob) return {};
  return unpack_keys(*blob);
}

std::vector<RootKey> Registry::marked_keys(db::Connection& conn, unsigned long long job_id, const std::string& state,
                                           const std::string& after_hash, size_t limit) const {
  db::RowSet r = conn.query(fmt::format(
      "SELECT m.root_key_hash, k.root_key FROM {} m JOIN {} k ON k.job_id = m.job_id AND k.root_key_hash = "
      "m.root_key_hash WHERE m.job_id = {} AND m.state = {} AND m.root_key_hash > {} ORDER BY m.root_key_hash LIMIT {}",
      table("root_marks"), table("root_mark_keys"), job_id, sql::quote(state),
      after_hash.empty() ? "''" : sql::hex_literal(after_hash), limit));
  std::vector<RootKey> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(RootKey{r.text(i, 1), r.text(i, 0)});
  return out;
}

void Registry::add_conflicts(db::Connection& conn, unsigned long long job_id, unsigned long long batch_id,
                             const std::vector<RootKey>& keys) const {
  if (keys.empty()) return;
  std::string values;
  for (size_t i = 0; i < keys.size(); ++i) {
    values += fmt::format("{}({},{},{},{})", i ? "," : "", job_id, sql::hex_literal(keys[i].hash),
                          sql::hex_literal(keys[i].encoded), batch_id);
  }
  conn.execute(fmt::format("INSERT INTO {} (job_id, root_key_hash, root_key, batch_id) VALUES {} ON DUPLICATE KEY "
                           "UPDATE batch_id = VALUES(batch_id)",
                           table("conflicts"), values));
}

std::vector<std::string> Registry::conflicts(db::Connection& conn, unsigned long long job_id) const {
  db::RowSet r = conn.query(
      fmt::format("SELECT root_key FROM {} WHERE job_id = {} ORDER BY created_at", table("conflicts"), job_id));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

void Registry::resolve_conflicts(db::Connection& conn, unsigned long long job_id,
                                 const std::vector<std::string>& hashes) const {
  if (hashes.empty()) return;
  std::string list;
  for (size_t i = 0; i < hashes.size(); ++i) list += (i ? "," : "") + sql::hex_literal(hashes[i]);
  conn.execute(fmt::format("DELETE FROM {} WHERE job_id = {} AND root_key_hash IN ({})", table("conflicts"), job_id,
                           list));
}

std::map<unsigned long long, unsigned long long> Registry::conflict_counts(db::Connection& conn) const {
  db::RowSet r = conn.query(fmt::format("SELECT job_id, COUNT(*) FROM {} GROUP BY job_id", table("conflicts")));
  std::map<unsigned long long, unsigned long long> out;
  for (size_t i = 0; i < r.rows(); ++i) out[std::stoull(r.text(i, 0))] = std::stoull(r.text(i, 1));
  return out;
}

std::vector<std::string> Registry::conflict_keys(db::Connection& conn, unsigned long long job_id,
                                                size_t limit) const {
  db::RowSet r = conn.query(fmt::format("SELECT root_key FROM {} WHERE job_id = {} ORDER BY created_at, root_key_hash "
                                        "LIMIT {}",
                                        table("conflicts"), job_id, limit));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

}  // namespace goarchive::tracking

#include "pipeline/commit_proof.h"

#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "plan/sql.h"
#include "util/error.h"
#include "util/fault.h"

namespace goarchive::pipeline {

namespace {

std::string new_token() {
  std::random_device rd;
  std::string t(16, '\0');
  for (size_t i = 0; i < t.size(); i += 4) {
    uint32_t v = rd();
    for (size_t b = 0; b < 4; ++b) t[i + b] = static_cast<char>((v >> (8 * b)) & 0xff);
  }
  return t;
}

}  // namespace

std::string CommitProof::table_name(const std::string& source_db) {
  return sql::qualified(source_db, "goarchive_commits");
}

bool CommitProof::start(const std::string& source_db) {
  m_available = false;
  if ((m_ctx.mode != Mode::archive && !m_ctx.restores()) || source_db.empty()) return false;
  m_table = table_name(source_db);
  try {
    // Created once; a DBA may create it beforehand and grant only INSERT, SELECT and DELETE on it.
    if (!m_ctx.production().scalar(fmt::format("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND "
                                      "TABLE_NAME = 'goarchive_commits'",
                                      sql::quote(source_db)))) {
      m_ctx.production().execute(fmt::format(
          "CREATE TABLE IF NOT EXISTS {} (token BINARY(16) NOT NULL PRIMARY KEY, job VARCHAR(255) NOT NULL, "
          "batch_id BIGINT UNSIGNED NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) "
          "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='goarchive: proofs that a delete committed, goarchive(1)'",
          m_table));
      fault::point("after_proof_table");
    }
    // The statements of a delete transaction, tried and rolled back: the privileges and the table's shape.
    db::Transaction probe(m_ctx.production());
    std::string t = new_token();
    m_ctx.production().execute(fmt::format("INSERT INTO {} (token, job, batch_id) VALUES ({}, 'probe', 0)", m_table,
                                  sql::hex_literal(t)));
    m_ctx.production().execute(fmt::format("DELETE FROM {} WHERE token IN ({})", m_table, sql::literal_list({t}, true)));
    m_ctx.production().scalar(fmt::format("SELECT 1 FROM {} WHERE token = {} FOR UPDATE", m_table, sql::hex_literal(t)));
  } catch (const db::DbError& e) {
    if (e.retryable()) throw;
    spdlog::warn("no commit proof: the source table {} cannot be used ({}); after a crash at a delete's commit, "
                 "roots the application changed meanwhile become conflicts. Let goarchive create the table (CREATE "
                 "privilege) or create it as goarchive(1) shows, with INSERT, SELECT and DELETE granted on it",
                 m_table, e.what());
    return false;
  }
  m_available = true;
  return true;
}

std::string CommitProof::stamp(unsigned long long batch_id) {
  if (!m_available) return "";
  std::vector<std::string> old = take_forgotten();
  if (!old.empty()) {
    m_ctx.production().execute(fmt::format("DELETE FROM {} WHERE token IN ({})", m_table, sql::literal_list(old, true)));
  }
  std::string t = new_token();
  m_ctx.production().execute(fmt::format("INSERT INTO {} (token, job, batch_id) VALUES ({}, {}, {})", m_table,
                                sql::hex_literal(t), sql::quote(m_ctx.job.name), batch_id));
  return t;
}

bool CommitProof::committed(const std::string& token) {
  if (!m_available) throw Error("internal: a commit proof was looked up without its table");
  db::Transaction tx(m_ctx.production());
  bool found = m_ctx.production()
                   .scalar(fmt::format("SELECT 1 FROM {} WHERE token = {} FOR UPDATE", m_table,
                                       sql::hex_literal(token)))
                   .has_value();
  tx.commit();
  return found;
}

void CommitProof::forget(const std::string& token) {
  if (token.empty()) return;
  std::lock_guard<std::mutex> g(m_mutex);
  m_forgotten.push_back(token);
}

void CommitProof::flush() {
  std::vector<std::string> old = take_forgotten();
  if (old.empty() || !m_available) return;
  try {
    m_ctx.production().execute(fmt::format("DELETE FROM {} WHERE token IN ({})", m_table, sql::literal_list(old, true)));
  } catch (const db::DbError& e) {
    spdlog::warn("{} commit proof(s) of done batches stay in {} ({}); they are small and harmless", old.size(),
                 m_table, e.what());
  }
}

std::vector<std::string> CommitProof::take_forgotten() {
  std::lock_guard<std::mutex> g(m_mutex);
  std::vector<std::string> out;
  out.swap(m_forgotten);
  return out;
}

}  // namespace goarchive::pipeline

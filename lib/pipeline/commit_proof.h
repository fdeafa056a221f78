#pragma once
// The proof that a batch's source delete committed (archive mode). The delete transaction inserts a random token
// into the source table `goarchive_commits` (in the source database) before the batch's move to `deleting` is
// recorded with that token on the destination; a recovery that finds the batch `deleting` reads the token back
// under a lock, which waits for a transaction still holding it: present means the delete committed, absent means
// it rolled back. Once the batch is done in the registry its token is deleted again, in a later delete
// transaction. This part owns that table and its rows; it never reads or writes the job's data rows.
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/context.h"

namespace goarchive::pipeline {

class CommitProof {
public:
  explicit CommitProof(Context& ctx) : m_ctx(ctx) {}

  // The table every proof lives in, qualified: `source_db`.`goarchive_commits`.
  static std::string table_name(const std::string& source_db);
  // archive mode with a source database set: makes sure the table exists and this user may insert and delete
  // in it (autocommit statements on the source). False, with one warning, when it cannot be used: recovery then
  // falls back to comparing versions (conflicts) as without a proof.
  bool start(const std::string& source_db);
  bool available() const { return m_available; }
  // Inside the source delete transaction: a new token for batch BATCH_ID, inserted; the tokens of batches
  // already done are deleted in the same transaction. Returns the raw 16-byte token.
  std::string stamp(unsigned long long batch_id);
  // Whether TOKEN's delete committed: a locking read in a transaction of its own, waiting for its writer.
  bool committed(const std::string& token);
  // The batch holding TOKEN is done in the registry: its row may go with the next stamp (or flush).
  void forget(const std::string& token);
  // Deletes the forgotten tokens now (end of run), autocommit; a failure only leaves a few small rows.
  void flush();

private:
  std::vector<std::string> take_forgotten();

  Context& m_ctx;
  std::string m_table;
  bool m_available = false;
  std::mutex m_mutex;  // m_forgotten: written by the main thread, taken by the source worker
  std::vector<std::string> m_forgotten;
};

}  // namespace goarchive::pipeline

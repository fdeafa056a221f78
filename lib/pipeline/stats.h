#pragma once
// The counters of a run: per table and per run, filled by the pipeline and read by the report. Plain data.
#include <set>
#include <string>
#include <vector>

namespace goarchive::pipeline {

struct TableStats {
  std::string table;
  unsigned long long copied = 0, verified = 0, deleted = 0, skipped_existing = 0;
};

struct Stats {
  std::vector<TableStats> tables;  // by node index
  unsigned long long batches = 0, roots = 0, roots_done = 0, roots_changed = 0, recovered = 0, retries = 0;
  unsigned long long roots_conflict = 0;  // kept on both sides: no proof the archived version may be replaced
  unsigned long long roots_withdrawn = 0;  // left in the source: no longer matched `where` under the delete's lock
  std::vector<std::string> conflicts;     // the conflicting roots, named by their key columns
  // Left in the source because a parent staying there or a table outside the job still holds their tree, or the
  // archive holds a row of it that this run did not write (or could not write exactly).
  unsigned long long roots_blocked = 0;
  std::vector<std::string> blocked;  // why, a line per root (the first k_blocked_kept, for the JSON summary)
  static constexpr size_t k_blocked_kept = 1000;
  static constexpr size_t k_blocked_logged = 10;  // warnings with their reason; the rest are counted at the end
  // Records one root left in the source and why: a warning for the first k_blocked_logged of the run, the reason
  // kept for the first k_blocked_kept. Returns whether to log it.
  bool add_blocked(std::string why) {
    ++roots_blocked;
    if (blocked.size() < k_blocked_kept) blocked.push_back(std::move(why));
    return roots_blocked <= k_blocked_logged;
  }
  // restore: roots that stay in the archive because they cannot go back (a key taken in the source, a missing
  // parent, ...: the run exits 1), and roots the source holds already with the same content (not an error).
  unsigned long long roots_kept = 0, roots_present = 0;
  // The partition path (partition_path.h): partitions detached, dropped (their rows archived or purged), left in
  // the table because their DDL gave up on the metadata lock, and rows of detached partitions that went back.
  unsigned long long partitions_detached = 0, partitions_done = 0, partitions_left = 0, partition_rows_back = 0;
  // purge: the server's estimate (TABLE_ROWS) of the rows in the partitions it dropped whole. A purge does not count
  // them: counting is a scan of each partition, which would cost more than its DDL.
  unsigned long long partition_rows_estimate = 0;
  double t_select = 0, t_copy = 0, t_verify = 0, t_delete = 0, t_held = 0, t_ddl = 0;
  double t_wait_source = 0;  // the main thread waiting for the source side (pipelined loop)
  // The source deletes' lock windows (batch.h t_locked): their sum, the longest, and how many.
  double t_locked = 0, t_locked_max = 0;
  unsigned long long locked_batches = 0;

  // Counts a root in conflict, named by its key, once however often the run meets it; the first 20 are named.
  void add_conflict(const std::string& name) {
    if (!conflicts_seen.insert(name).second) return;
    ++roots_conflict;
    if (conflicts.size() < 20) conflicts.push_back(name);
  }
  std::set<std::string> conflicts_seen;  // every conflicting root's name, for add_conflict
};

}  // namespace goarchive::pipeline

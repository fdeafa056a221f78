#pragma once
// Test-only fault hooks: GOARCHIVE_FAULT=<point>[:<n>] kills the process with SIGKILL at the n-th time
// (default 1st) it passes <point>; GOARCHIVE_PAUSE=<point>:<n>:<file> writes <file>.reached there and waits
// while <file> exists. Compiled out of release builds (GOARCHIVE_FAULT_HOOKS off).
#include <array>
#include <string_view>

namespace goarchive::fault {

// Every point the code passes, the one list: a name passed to point() that is not here does not compile, and
// a GOARCHIVE_FAULT or GOARCHIVE_PAUSE that names another is refused at start-up (a misspelt point must not
// pass silently as a clean run).
inline constexpr std::array<std::string_view, 27> k_points = {
    "creating_schema",     "after_locks",          "after_read",          "before_copy_commit",
    "after_verify",        "after_copy_commit",    "delete_start",        "after_locked_read",
    "after_mark_deleting", "before_delete_commit", "after_delete_commit", "after_batch",
    // Commits beside the batch's own: the copy sweep's, a recovery's removal of an unfinished copy, a parked
    // conflict's, a recovery's adoption of a batch; the commit proof's table; a recovery with every batch
    // adopted; the one-pass delete after its RETURNING deletes, before its commit or its ROLLBACK TO SAVEPOINT.
    "before_sweep_commit", "before_remove_copy_commit", "before_conflict_commit", "before_adopt_commit",
    "after_proof_table", "recovery_adopted", "after_returning_delete",
    // restore: its batch claimed with its proof on the archive, the copy into the source not yet committed.
    "after_restore_claim",
    // The partition path (partition_path.h): each step recorded and not yet done, or done and not yet recorded.
    "partition_detaching", "partition_after_detach", "partition_after_prove", "partition_before_copy_commit",
    "partition_after_copy_commit", "partition_copied", "partition_after_drop"};

// Whether NAME is one of k_points.
constexpr bool known(std::string_view name) {
  for (std::string_view p : k_points) {
    if (p == name) return true;
  }
  return false;
}

// A point's name, checked against k_points when the call is compiled.
struct Name {
  // The throw is never evaluated for a known name; for another it makes the constant evaluation fail.
  consteval Name(const char* n) : text(n) {  // NOLINT(google-explicit-constructor): point("after_batch")
    if (!known(n)) throw "fault::point: add this name to fault::k_points (lib/util/fault.h)";
  }
  const char* text;
};

#ifdef GOARCHIVE_FAULT_HOOKS
void point(Name name);
#else
inline void point(Name) {}
#endif

// Refuses (ConfigError, exit 2) a GOARCHIVE_FAULT or GOARCHIVE_PAUSE that is malformed or names a point not
// in k_points, and either variable in a build without the hooks, so that a test never mistakes such a run for
// a clean one. Called once, before the command runs.
void check_environment();

}  // namespace goarchive::fault

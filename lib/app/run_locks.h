#pragma once
// The run's locks (seed 001): the schema lock around creating the registry, the job lock on the destination,
// the table locks on the source, and the error a run raises when it finds one lost. Acquiring only: the lock
// sessions release everything when they close.
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "locks/lock_set.h"
#include "tracking/registry.h"
#include "util/error.h"

namespace goarchive::app {

// The run lost a lock set: raised before a commit, so the transaction in flight rolls back (exit 1).
class LockLost : public Error {
public:
  explicit LockLost(const std::string& where);
};

// Creates the tracking schema under the schema lock if it is not ready; exit 4 after 60 s of waiting.
void ensure_registry(const config::Config& cfg, locks::LockSession& dest_lock, db::Connection& dst,
                     const tracking::Registry& registry);
// The job lock, without waiting; exit 4 naming the holder.
void acquire_job_lock(locks::LockSession& dest_lock, std::vector<locks::NamedLock>& jl, const config::Job& job);
// Every table lock in a fixed order, without waiting; exit 4 naming the table and the holder.
void acquire_table_locks(locks::LockSession& src_lock, std::vector<locks::NamedLock>& tl);

}  // namespace goarchive::app

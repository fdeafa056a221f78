#pragma once
// The unfinished-work guard (seed 001), checked with both lock sets held: another job on the same source data
// that shares a table and is running or holds unfinished roots refuses this run. It only reads the registry.
#include <string>
#include <vector>

#include "db/connection.h"
#include "guard/gtid.h"
#include "tracking/registry.h"

namespace goarchive::app {

// Throws BusyError (exit 4) while every blocking job is live, Error (exit 1) otherwise; each job is named with
// its state and its way out.
void check_guard(const tracking::Registry& registry, db::Connection& dst, unsigned long long job_id,
                 const std::vector<std::string>& table_keys, const guard::SourceIdentity& self);

}  // namespace goarchive::app

#pragma once
// restore's own preflight, beside the archive checks it shares (preflight.h): the source tables take the rows
// back without an INSERT trigger firing, the archive tables give them up without a DELETE trigger, the accounts
// may write what restore writes (INSERT on the source tables, DELETE on the archive tables unless --keep-archive,
// the commit proofs' table; checked with app/privileges.h, as archive's are), `--where` runs
// on the archived root table, and no other job of the registry fills the same archive tables (restore takes back
// only what this job archived). It only reads; failures go into the caller's report.
#include <string>

#include "app/preflight.h"
#include "config/config.h"
#include "db/connection.h"
#include "plan/tree.h"

namespace goarchive::app {

// Adds restore's failures to `report` (its source_tables already read by preflight()).
void check_restore(const config::Config& cfg, const config::Job& job, const plan::Tree& tree, bool keep_archive,
                   db::Connection& source, db::Connection& archive, PreflightReport& report);

// Refuses (ConfigError, exit 2) a restore when another job of the registry archives into the same archive root
// table: nothing tells its rows from this job's. Call after the registry exists.
void check_sole_archiver(const config::Config& cfg, const config::Job& job, db::Connection& archive);

}  // namespace goarchive::app

#pragma once
// Preflight: named checks that refuse a job before any data moves, each saying what to change.
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "pipeline/engine.h"
#include "plan/tree.h"
#include "schema/catalog.h"

namespace goarchive::app {

struct PreflightReport {
  std::vector<schema::TableInfo> source_tables;  // by tree node index
  std::vector<std::string> failures;             // one sentence each: what, why, the fix
  size_t config_failures = 0;                     // how many of them only the config file can fix
  std::vector<std::string> notes;                 // not failures: what a run would warn about, and the fix
  bool ok() const { return failures.empty(); }
};

// Who asks. A check of what only a real run would break (a run writing to a replica) refuses the run, is a
// failure of validate, and only a warning of dry-run, which writes nothing.
enum class Purpose { run, dry_run, validate };

// Runs every check; `destination` may be null for purge. Never writes anything.
PreflightReport preflight(const config::Config& cfg, const config::Job& job, const plan::Tree& tree,
                          pipeline::Mode mode, db::Connection& source, db::Connection* destination,
                          Purpose purpose = Purpose::run);

// Throws listing every failure of the report: ConfigError (exit 2) when each is fixed in the config file,
// PreflightError (exit 1) otherwise.
void require(const PreflightReport& report, const std::string& job);

}  // namespace goarchive::app

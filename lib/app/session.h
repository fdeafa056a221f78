#pragma once
// Connections, lock sessions and source identity of one run; shared by run, dry-run, validate and locks.
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"
#include "guard/gtid.h"
#include "locks/lock_set.h"
#include "pipeline/engine.h"
#include "plan/tree.h"

namespace goarchive::app {

pipeline::Mode to_pipeline(int mode);

std::unique_ptr<db::Connection> connect(const config::ServerConfig& server, const std::string& purpose,
                                        const std::string& tag = "");

// Reads server_id, GTID state and flavor of the source (MariaDB and MySQL).
guard::SourceIdentity source_identity(db::Connection& source, const config::ServerConfig& cfg);

// The named locks of a job: the job lock (destination) and one per table of its tree (source), sorted.
std::vector<locks::NamedLock> job_locks(const config::Config& cfg, const config::Job& job);
std::vector<locks::NamedLock> table_locks(const config::Config& cfg, const plan::Tree& tree);
locks::NamedLock schema_lock(const config::Config& cfg);

// Hash that scopes a root in the log: source server, database and root table.
std::string root_scope(const config::Config& cfg, const config::Job& job);

}  // namespace goarchive::app

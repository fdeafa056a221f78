#pragma once
// The owner record of an archive database: the one registry (job_schema) and the one source data whose runs
// write its rows. Two registries, or two sources (two shards), filling one archive database could each remove
// rows the other relies on (a recovery, a sweep, the removal of a kept root's copy all go by primary key), so the
// second is refused. The same data read from another server (a replica of the recorded source, or the server it
// replicates from, by GTID state) is the same source. The database enforces one record: the table's only key is
// a constant. Never touches data rows.
#include <optional>
#include <string>

#include "db/connection.h"
#include "schema/catalog.h"

namespace goarchive::tracking {

struct ArchiveOwner {
  std::string registry;              // the job_schema, on the destination server
  schema::ServerIdentity server;     // the source server as it named itself when it claimed the archive
  std::string database;              // the source database
};

// Pure: "host:port database db" (with the server_uuid on MySQL), for messages.
std::string source_name(const ArchiveOwner& owner);

// Pure: "" when `wanted` may write the archive database `found` owns (the same registry, and the same source
// data: the same server, or one holding the other's transactions, and the same database name), else the
// refusal naming the owner and the ways out.
std::string owner_problem(const std::string& archive_db, const ArchiveOwner& found, const ArchiveOwner& wanted);

// The owner record of `archive_db` on `dst`; nullopt when it has none (no table or no row). Reads only.
std::optional<ArchiveOwner> read_owner(db::Connection& dst, const std::string& archive_db);

// Records `wanted` as the owner of `archive_db` on `dst` when it has none; throws ConfigError (exit 2) when
// another registry or source owns it. Runs its own statements (call outside a transaction).
void claim_archive(db::Connection& dst, const std::string& archive_db, const ArchiveOwner& wanted);

}  // namespace goarchive::tracking

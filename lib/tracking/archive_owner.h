#pragma once
// The owner record of an archive database: the one registry (job_schema) and the one source database whose runs
// write its rows. Two registries, or two sources, filling one archive database could each remove rows the other
// relies on (a recovery, a sweep, the removal of a kept root's copy all go by primary key), so the second is
// refused. The database enforces one record: the table's only key is a constant. Never touches data rows.
#include <string>

#include "db/connection.h"

namespace goarchive::tracking {

struct ArchiveOwner {
  std::string registry;  // the job_schema, on the destination server
  std::string source;    // the source: server and database (see source_name)
};

// Pure: the source part of an owner record: the server as it names itself (hostname and port, and the server_uuid
// on MySQL) and the database.
std::string source_name(const std::string& hostname, unsigned port, const std::string& server_uuid,
                        const std::string& database);

// Pure: "" when `found` is `wanted`, else the refusal: what owns the archive database and the ways out.
std::string owner_problem(const std::string& archive_db, const ArchiveOwner& found, const ArchiveOwner& wanted);

// Records `wanted` as the owner of `archive_db` on `dst` when it has none; throws ConfigError (exit 2) when
// another registry or source owns it. Commits on its own (call outside a transaction).
void claim_archive(db::Connection& dst, const std::string& archive_db, const ArchiveOwner& wanted);

}  // namespace goarchive::tracking

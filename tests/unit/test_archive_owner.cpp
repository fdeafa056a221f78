// The owner record of an archive database (tracking::owner_problem): one registry and one source data per archive
// database, where the source may be read from a replica of the recorded server, or from the server it replicates
// from. Server values as the test servers of scripts/servers.sh report themselves (source 1 -> replica 2).
#include <doctest/doctest.h>

#include "identities.h"
#include "tracking/archive_owner.h"

using goarchive::schema::ServerIdentity;
using goarchive::tracking::ArchiveOwner;
using goarchive::test::maria;
using goarchive::tracking::owner_problem;

TEST_CASE("archive owner: the same registry and source data may write; the recorded source read from a replica too") {
  ArchiveOwner primary{"goarchive", maria(1, 23306, "1-1-1609,"), "shop"};
  CHECK(owner_problem("shop_archive", primary, primary) == "");
  ArchiveOwner replica{"goarchive", maria(2, 23307, "1-1-1700,2-2-76,1-1-1700"), "shop"};
  CHECK(owner_problem("shop_archive", primary, replica) == "");
  CHECK(owner_problem("shop_archive", replica, primary) == "");
}

TEST_CASE("archive owner: a second registry, or a second source (another database, an unrelated shard), is refused") {
  ArchiveOwner owner{"goarchive", maria(1, 23306, "1-1-1609,"), "shop"};
  ArchiveOwner other_registry = owner;
  other_registry.registry = "goarchive_b";
  CHECK(owner_problem("shop_archive", owner, other_registry) ==
        "the archive database shop_archive is filled by the runs of registry (job_schema) goarchive, not goarchive_b: "
        "a second registry or source writing to it could remove archived rows the other relies on. Give this job a "
        "destination database of its own, or the same job_schema; if the source itself moved (a failover to a server "
        "that does not replicate from it), remove the record and run again: DELETE FROM `shop_archive`.goarchive_owner");
  ArchiveOwner other_db = owner;
  other_db.database = "shop2";
  CHECK(owner_problem("shop_archive", owner, other_db).find("source vm:23306 database shop, not vm:23306 database "
                                                            "shop2") != std::string::npos);
  // A shard: another server with the same database name and a GTID history of its own.
  ArchiveOwner shard{"goarchive", maria(1, 23316, "5-1-88,"), "shop"};
  shard.server.hostname = "shard2";
  CHECK(owner_problem("shop_archive", owner, shard).find("not shard2:23316 database shop") != std::string::npos);
}

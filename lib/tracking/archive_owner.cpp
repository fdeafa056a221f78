#include "tracking/archive_owner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "plan/sql.h"
#include "util/error.h"

namespace goarchive::tracking {

namespace {

std::string text(const std::string& value) { return sql::literal(std::optional<std::string>(value), false); }

void create_table(db::Connection& dst, const std::string& table) {
  dst.execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (`one` TINYINT UNSIGNED NOT NULL DEFAULT 1, `registry` VARCHAR(64) NOT NULL, "
      "`source` VARCHAR(1024) NOT NULL, `flavor` VARCHAR(16) NOT NULL, `server_id` BIGINT UNSIGNED NOT NULL, "
      "`server_uuid` VARCHAR(64) NOT NULL, `hostname` VARCHAR(255) NOT NULL, `port` INT UNSIGNED NOT NULL, "
      "`datadir` VARCHAR(1024) NOT NULL, `gtid_state` MEDIUMTEXT NOT NULL, `database_name` VARCHAR(64) NOT NULL, "
      "`created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (`one`), "
      "CONSTRAINT `goarchive_owner_one` CHECK (`one` = 1)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
      "COLLATE=utf8mb4_bin COMMENT='goarchive: the one registry and source whose runs write this database'",
      table));
}

}  // namespace

std::string source_name(const ArchiveOwner& owner) {
  std::string server = fmt::format("{}:{}", owner.server.hostname, owner.server.port);
  if (!owner.server.server_uuid.empty()) server += " (" + owner.server.server_uuid + ")";
  return server + " database " + owner.database;
}

std::string owner_problem(const std::string& archive_db, const ArchiveOwner& found, const ArchiveOwner& wanted) {
  const bool same_registry = found.registry == wanted.registry;
  if (same_registry && schema::relate(found.server, found.database, wanted.server, wanted.database).same_data) {
    return "";
  }
  std::string what = !same_registry
                         ? fmt::format("registry (job_schema) {}, not {}", found.registry, wanted.registry)
                         : fmt::format("source {}, not {}", source_name(found), source_name(wanted));
  return fmt::format(
      "the archive database {} is filled by the runs of {}: a second registry or source writing to it could remove "
      "archived rows the other relies on. Give this job a destination database of its own{}; if the source itself "
      "moved (a failover to a server that does not replicate from it), remove the record and run again: DELETE "
      "FROM {}.goarchive_owner",
      archive_db, what, same_registry ? "" : ", or the same job_schema", sql::ident(archive_db));
}

namespace {

void claim(db::Connection& dst, const std::string& archive_db, const ArchiveOwner& wanted) {
  const std::string table = sql::qualified(archive_db, "goarchive_owner");
  const schema::ServerIdentity& s = wanted.server;
  // A record there already is judged as it is: no CREATE or INSERT is needed for it (an account with SELECT only,
  // such as restore's, is then not told that it has none).
  if (std::optional<ArchiveOwner> found = read_owner(dst, archive_db)) {
    found->server.case_insensitive_names = s.case_insensitive_names;
    if (std::string problem = owner_problem(archive_db, *found, wanted); !problem.empty()) throw ConfigError(problem);
    return;
  }
  try {
    create_table(dst, table);
  } catch (const db::DbError& e) {
    if (e.code() != 1142 && e.code() != 1044) throw;  // it may exist: created by an account that could
  }
  dst.execute(fmt::format("INSERT IGNORE INTO {} (`one`, `registry`, `source`, `flavor`, `server_id`, `server_uuid`, "
                          "`hostname`, `port`, `datadir`, `gtid_state`, `database_name`) VALUES (1, {}, {}, {}, {}, "
                          "{}, {}, {}, {}, {}, {})",
                          table, text(wanted.registry), text(source_name(wanted)), text(s.mariadb ? "mariadb" : "mysql"),
                          s.server_id, text(s.server_uuid), text(s.hostname), s.port, text(s.datadir),
                          text(s.gtid_state), text(wanted.database)));
  std::optional<ArchiveOwner> found = read_owner(dst, archive_db);
  if (!found) throw Error("cannot read the owner record " + table);
  found->server.case_insensitive_names = s.case_insensitive_names;
  if (std::string problem = owner_problem(archive_db, *found, wanted); !problem.empty()) throw ConfigError(problem);
}

}  // namespace

std::optional<ArchiveOwner> read_owner(db::Connection& dst, const std::string& archive_db) {
  if (!dst.scalar(fmt::format("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = "
                              "'goarchive_owner'",
                              text(archive_db)))) {
    return std::nullopt;
  }
  db::RowSet r = dst.query(fmt::format("SELECT `registry`, `flavor`, `server_id`, `server_uuid`, `hostname`, `port`, "
                                       "`datadir`, `gtid_state`, `database_name` FROM {} WHERE `one` = 1",
                                       sql::qualified(archive_db, "goarchive_owner")));
  if (r.rows() != 1) return std::nullopt;
  ArchiveOwner found;
  found.registry = r.text(0, 0);
  found.server.mariadb = r.text(0, 1) == "mariadb";
  found.server.server_id = std::stoull(r.text(0, 2));
  found.server.server_uuid = r.text(0, 3);
  found.server.hostname = r.text(0, 4);
  found.server.port = static_cast<unsigned>(std::stoul(r.text(0, 5)));
  found.server.datadir = r.text(0, 6);
  found.server.gtid_state = r.text(0, 7);
  found.database = r.text(0, 8);
  return found;
}

void claim_archive(db::Connection& dst, const std::string& archive_db, const ArchiveOwner& wanted) {
  try {
    claim(dst, archive_db, wanted);
  } catch (const db::DbError& e) {
    // An account without CREATE (or INSERT) on the archive database gets no record, as it gets no commit proof:
    // the rule itself (no row adopted, removals only of rows a batch wrote) holds without it.
    if (e.code() != 1142 && e.code() != 1044 && e.code() != 1146) throw;
    spdlog::warn("no owner record in the archive database {} ({}); grant CREATE and INSERT on it so that a second "
                 "registry or source is refused there",
                 archive_db, e.what());
  }
}

}  // namespace goarchive::tracking

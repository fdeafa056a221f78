#include "tracking/archive_owner.h"

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/error.h"

namespace goarchive::tracking {

namespace {
std::string text(const std::string& value) { return sql::literal(std::optional<std::string>(value), false); }
}  // namespace

std::string source_name(const std::string& hostname, unsigned port, const std::string& server_uuid,
                        const std::string& database) {
  std::string server = fmt::format("{}:{}", hostname, port);
  if (!server_uuid.empty()) server += " (" + server_uuid + ")";
  return server + " database " + database;
}

std::string owner_problem(const std::string& archive_db, const ArchiveOwner& found, const ArchiveOwner& wanted) {
  if (found.registry == wanted.registry && found.source == wanted.source) return "";
  std::string what = found.registry != wanted.registry
                         ? fmt::format("registry (job_schema) {}, not {}", found.registry, wanted.registry)
                         : fmt::format("source {}, not {}", found.source, wanted.source);
  return fmt::format(
      "the archive database {} is filled by the runs of {}: a second registry or source writing to it could remove "
      "archived rows the other relies on. Give this job a destination database of its own, or the same job_schema; "
      "if the source itself moved (a failover), record its new name: UPDATE {}.goarchive_owner SET registry = {}, "
      "source = {}",
      archive_db, what, sql::ident(archive_db), text(wanted.registry), text(wanted.source));
}

void claim_archive(db::Connection& dst, const std::string& archive_db, const ArchiveOwner& wanted) {
  const std::string table = sql::qualified(archive_db, "goarchive_owner");
  dst.execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (`one` TINYINT UNSIGNED NOT NULL DEFAULT 1, `registry` VARCHAR(64) NOT NULL, "
      "`source` VARCHAR(1024) NOT NULL, `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
      "PRIMARY KEY (`one`), CONSTRAINT `goarchive_owner_one` CHECK (`one` = 1)) ENGINE=InnoDB "
      "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='goarchive: the one registry and source whose runs "
      "write this database'",
      table));
  dst.execute(fmt::format("INSERT IGNORE INTO {} (`one`, `registry`, `source`) VALUES (1, {}, {})", table,
                          text(wanted.registry), text(wanted.source)));
  db::RowSet r = dst.query(fmt::format("SELECT `registry`, `source` FROM {} WHERE `one` = 1", table));
  if (r.rows() != 1) throw Error("cannot read the owner record " + table);
  ArchiveOwner found{r.text(0, 0), r.text(0, 1)};
  if (std::string problem = owner_problem(archive_db, found, wanted); !problem.empty()) throw ConfigError(problem);
}

}  // namespace goarchive::tracking

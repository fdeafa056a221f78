#include "app/preflight_restore.h"

#include <fmt/format.h>

#include "app/privileges.h"
#include "pipeline/commit_proof.h"
#include "plan/sql.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

// Triggers of `timing` ('INSERT' / 'DELETE') on `table` in `database`, by name.
std::vector<std::string> triggers(db::Connection& conn, const std::string& database, const std::string& table,
                                  const char* event) {
  db::RowSet r = conn.query(fmt::format("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE "
                                        "EVENT_OBJECT_SCHEMA = {} AND EVENT_OBJECT_TABLE = {} AND EVENT_MANIPULATION = "
                                        "'{}' ORDER BY TRIGGER_NAME",
                                        sql::quote(database), sql::quote(table), event));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

// The writes restore makes: INSERT into every source table of the tree, DELETE from every archive table (none
// with --keep-archive), and the commit proofs in the source's goarchive_commits (created by the run when the
// account may).
void check_restore_privileges(const config::Config& cfg, const plan::Tree& tree, bool keep_archive,
                              db::Connection& source, db::Connection& archive, PreflightReport& report) {
  auto require = [&](db::Connection& conn, const std::vector<std::string>& privs, const std::string& database,
                     const std::string& table, const char* where) {
    if (std::string missing = missing_privileges(conn, privs, database, table, where); !missing.empty()) {
      report.failures.push_back("restore: " + missing);
    }
  };
  for (const auto& n : tree.nodes()) {
    require(source, {"INSERT"}, cfg.source.database, n.table, "source");
    if (!keep_archive) require(archive, {"DELETE"}, cfg.destination.database, n.table, "destination");
  }
  const std::string& sdb = cfg.source.database;
  bool exists = source.scalar(fmt::format("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND "
                                          "TABLE_NAME = 'goarchive_commits'",
                                          sql::quote(sdb)))
                    .has_value();
  if (exists) {
    require(source, {"SELECT", "INSERT", "DELETE"}, sdb, "goarchive_commits", "source");
  } else if (!has_privilege(source, "CREATE", sdb, "goarchive_commits")) {
    report.failures.push_back(fmt::format(
        "restore needs the source table {} to prove which copies committed after a crash, and it does not exist: "
        "let goarchive create it (GRANT CREATE ON {}.* on the source) or create it as goarchive(1) shows, with "
        "INSERT, SELECT and DELETE granted on it",
        pipeline::CommitProof::table_name(sdb), sql::ident(sdb)));
  }
}

}  // namespace

void check_restore(const config::Config& cfg, const config::Job& job, const plan::Tree& tree, bool keep_archive,
                   db::Connection& source, db::Connection& archive, PreflightReport& report) {
  for (const auto& n : tree.nodes()) {
    auto on_source = triggers(source, cfg.source.database, n.table, "INSERT");
    if (!on_source.empty()) {
      report.failures.push_back(fmt::format(
          "table {}.{} has an INSERT trigger on the source ({}): restore would fire it for every row it puts back; "
          "drop or disable it for the restore and re-create it after, or restore those rows by hand",
          cfg.source.database, n.table, join(on_source, ", ")));
    }
    if (keep_archive) continue;
    auto on_archive = triggers(archive, cfg.destination.database, n.table, "DELETE");
    if (!on_archive.empty()) {
      report.failures.push_back(fmt::format(
          "table {}.{} has a DELETE trigger on the archive ({}): restore would fire it for every row it takes out "
          "of the archive; drop it, or restore with --keep-archive",
          cfg.destination.database, n.table, join(on_archive, ", ")));
    }
  }
  check_restore_privileges(cfg, tree, keep_archive, source, archive, report);
  try {
    archive.query(fmt::format("SELECT 1 FROM {} WHERE ({}) LIMIT 0", sql::qualified(cfg.destination.database, job.root_table),
                              job.where));
  } catch (const db::DbError& e) {
    if (e.connection_lost() || e.retryable()) throw;
    ++report.config_failures;
    report.failures.push_back(fmt::format("restore --where does not run on the archived root table {}.{}: {}; write "
                                          "it as a condition on that table's columns (1=1 restores every root)",
                                          cfg.destination.database, job.root_table, e.what()));
  }
}

void check_sole_archiver(const config::Config& cfg, const config::Job& job, db::Connection& archive) {
  db::RowSet r = archive.query(fmt::format(
      "SELECT name FROM {} WHERE destination_database = {} AND root_table = {} AND name <> {} ORDER BY name",
      sql::qualified(cfg.destination.job_schema, "jobs"), sql::quote(cfg.destination.database),
      sql::quote(job.root_table), sql::quote(job.name)));
  if (r.rows() == 0) return;
  std::vector<std::string> others;
  for (size_t i = 0; i < r.rows(); ++i) others.push_back(r.text(i, 0));
  throw ConfigError(fmt::format("restore of job {} refused: job(s) {} of the same registry archive into {}.{} too, "
                                "and nothing tells their rows from this job's; restore with the job that archived "
                                "them, or give each job an archive database of its own",
                                job.name, join(others, ", "), cfg.destination.database, job.root_table));
}

}  // namespace goarchive::app

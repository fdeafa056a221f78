#include "app/preflight.h"

#include "app/delete_triggers.h"
#include "app/held_roots.h"
#include "app/name_hints.h"
#include "app/preflight_keys.h"
#include "app/privileges.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "pipeline/commit_proof.h"
#include "pipeline/partition_plan.h"
#include "plan/sql.h"
#include "tracking/archive_owner.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

class Checker {
public:
  Checker(const config::Config& cfg, const config::Job& job, const plan::Tree& tree, pipeline::Mode mode,
          db::Connection& src, db::Connection* dst, Purpose purpose)
      : m_cfg(cfg), m_job(job), m_tree(tree), m_mode(mode), m_purpose(purpose), m_src(src), m_dst(dst) {}

  PreflightReport run() {
    const std::string& sdb = m_cfg.source.database;
    if (sdb.empty()) {
      fail("[source] has no database; set database = \"<schema>\" in [source]");
      return m_report;
    }
    if (!schema::database_exists(m_src, sdb)) {
      fail(fmt::format("the source database {} does not exist on {}; fix [source] database", sdb, m_src.label()));
      return m_report;
    }
    std::vector<std::string> names;
    for (const auto& n : m_tree.nodes()) names.push_back(n.table);
    m_report.source_tables = schema::read_tables(m_src, sdb, names);
    // Every check runs that can: validate reports every failure, not just the first.
    bool all_exist = true, all_keyed = true;
    for (const auto& t : m_report.source_tables) {
      all_exist &= check_source_table(t);
      all_keyed &= !t.primary_key.empty();
    }
    if (all_exist) {
      if (all_keyed) check_keys_and_relations();
      check_foreign_keys();
      if (all_keyed) check_held_roots();
      check_where();
      check_source_privileges();
    }
    // The lock, data and checks sessions, and in the modes that delete the reads session.
    check_connections(m_src, m_mode == pipeline::Mode::copy_only ? 3 : 4, "source");
    check_source_binlog();
    check_source_not_replica();
    check_commit_proof();
    check_copy_only_graph();
    // The destination's own checks mean nothing when it is the source's data: that is the one problem then.
    bool own_data = m_dst && check_not_source_data();
    if (m_mode != pipeline::Mode::purge && m_dst && !own_data) {
      check_destination();
      check_archive_owner();
    }
    if (m_dst) {
      check_connections(*m_dst, 4, "destination");
      check_registry_privileges();
    }
    return std::move(m_report);
  }

private:
  // copy-only keeps no archive of its own decisions about rows with several parents (a diamond): a copy of one
  // root may hold a row whose other parent's copy comes later, goes stale or is removed by the sweep.
  void check_copy_only_graph() {
    if (m_mode != pipeline::Mode::copy_only) return;
    for (const auto& n : m_tree.nodes()) {
      if (n.also.empty()) continue;
      fail_config(fmt::format("table {} has several parents in job \"{}\" (a diamond), which copy-only does not "
                              "support; archive the job with `goarchive archive`, or keep one relation of {}",
                              n.table, m_job.name, n.table));
      return;
    }
  }

  void fail(std::string message) { m_report.failures.push_back(std::move(message)); }
  // A failure whose only fix is in the config file (exit 2 when every failure is one).
  void fail_config(std::string message) {
    ++m_report.config_failures;
    fail(std::move(message));
  }
  std::string name(const schema::TableInfo& t) const { return t.database + "." + t.name; }
  // The source loses rows in this mode (restore writes the source and deletes from the archive).
  bool deletes() const { return m_mode != pipeline::Mode::copy_only && m_mode != pipeline::Mode::restore; }

  bool check_source_table(const schema::TableInfo& t) {
    if (!t.exists) {
      fail_config(fmt::format("table {} does not exist on the source; fix the table name in [jobs.{}]: {}", name(t),
                              m_job.name, table_hint(m_src, t.database, t.name)));
      return false;
    }
    if (t.table_type != "BASE TABLE") {
      fail(fmt::format("{} is a {}, not a base table: goarchive archives base tables only; name the underlying table",
                       name(t), ascii_lower(t.table_type)));
      return false;
    }
    if (ascii_lower(t.engine) != "innodb") {
      fail(fmt::format("table {} uses the {} engine: goarchive needs InnoDB transactions to copy and delete safely; "
                       "run ALTER TABLE {} ENGINE=InnoDB",
                       name(t), t.engine, sql::qualified(t.database, t.name)));
    }
    if (t.primary_key.empty()) {
      fail(fmt::format("table {} has no primary key: goarchive copies, verifies and deletes rows by exact key; add "
                       "one with ALTER TABLE {} ADD PRIMARY KEY (...)",
                       name(t), sql::qualified(t.database, t.name)));
    }
    if (deletes() && t.has_trigger("DELETE")) check_delete_triggers(t);
    return true;
  }

  // A DELETE trigger fires for every row the run deletes: refused, unless the job opts in (force_triggers), and then
  // each trigger is stated with what it does, as a warning of the run (a note of validate).
  void check_delete_triggers(const schema::TableInfo& t) {
    std::vector<DeleteTrigger> triggers;
    try {
      triggers = delete_triggers(m_src, t.database, t.name);
    } catch (const db::DbError& e) {
      spdlog::debug("the DELETE triggers of {} could not be read ({})", name(t), e.what());
    }
    const std::string mode = m_mode == pipeline::Mode::purge ? "purge" : "archive";
    if (!m_job.force_triggers) {
      fail(fmt::format("table {} has a DELETE trigger on the source{}: {} would fire it for every row it deletes; drop "
                       "or disable the trigger, or run copy-only; or, to let it fire on each delete, opt in with "
                       "--force-triggers (or force_triggers = true in [jobs.{}]), and the run logs what it does",
                       name(t), triggers.empty() ? "" : " (" + trigger_names(triggers) + ")", mode, m_job.name));
      return;
    }
    for (const auto& trg : triggers) note_or_warn(forced_trigger_note(trg, mode));
  }

  void check_keys_and_relations() {
    const auto& root = m_report.source_tables[0];
    if (!m_job.primary_key.empty()) {
      bool unique = std::any_of(root.unique_keys.begin(), root.unique_keys.end(),
                                [&](const auto& k) { return same_columns(k, m_job.primary_key); });
      if (!unique) {
        std::string missing;
        for (const auto& c : m_job.primary_key) {
          if (!root.column(c)) missing += fmt::format(" (column {} does not exist in it{})", c, column_hint(root, c));
        }
        fail_config(fmt::format("jobs.{}.primary_key = ({}) is not a unique key of {}{}; omit it to use the table's "
                                "primary key",
                                m_job.name, join(m_job.primary_key, ", "), name(root), missing));
      }
      for (const auto& c : m_job.primary_key) {
        const schema::Column* col = root.column(c);
        if (col && col->nullable) {
          fail(fmt::format("jobs.{}.primary_key column {}.{} allows NULL: a root whose key is NULL could never be "
                           "found again to verify or delete it (NULL equals nothing); omit primary_key to use the "
                           "table's primary key",
                           m_job.name, name(root), col->name));
        }
      }
    }
    for (const auto& c : m_job.primary_key.empty() ? root.primary_key : m_job.primary_key) {
      check_key_column(root, c, "the root key");
    }
    for (size_t i = 1; i < m_report.source_tables.size(); ++i) {
      for (const auto& c : m_report.source_tables[i].primary_key) check_key_column(m_report.source_tables[i], c, "primary key");
    }
    for (size_t i = 1; i < m_tree.nodes().size(); ++i) {
      for (const auto& e : m_tree.nodes()[i].edges()) check_relation(i, e);
    }
  }

  // One edge of the job's graph: table `i` under parent `e.parent`.
  void check_relation(size_t i, const plan::Edge& e) {
    const std::string& table = m_tree.nodes()[i].table;
    const auto& t = m_report.source_tables[i];
    const auto& p = m_report.source_tables[static_cast<size_t>(e.parent)];
    for (const auto& c : e.foreign_key) {
      const schema::Column* col = t.column(c);
      if (!col) fail_config(missing_foreign_key_column(t, p, c));
      else if (col->generated) fail(fmt::format("relation {}: foreign key column {} is generated", table, c));
    }
    std::vector<std::string> refs = e.references.empty() ? p.primary_key : e.references;
    bool refs_exist = true;
    for (const auto& c : refs) {
      if (!p.column(c)) {
        refs_exist = false;
        fail_config(fmt::format("relation {}: referenced column {} does not exist in {}{}; fix references", table, c,
                                name(p), column_hint(p, c)));
      } else {
        check_key_column(p, c, "references of relation " + table);
      }
    }
    for (const auto& c : e.foreign_key) check_key_column(t, c, "foreign_key of relation " + table);
    if (refs.size() != e.foreign_key.size()) {
      fail(fmt::format("relation {}: foreign_key has {} column(s) but {}'s key has {}; list one column per key "
                       "column (or set references)",
                       table, e.foreign_key.size(), p.name, refs.size()));
    }
    if (!e.references.empty() && refs_exist) {  // a missing column is the one problem, not also a missing key
      bool unique = std::any_of(p.unique_keys.begin(), p.unique_keys.end(),
                                [&](const auto& k) { return same_columns(k, e.references); });
      if (!unique) {
        fail(fmt::format("relation {}: references ({}) is not a unique key of {}; a child must point at exactly one "
                         "parent row",
                         table, join(e.references, ", "), name(p)));
      }
    }
  }

  // A foreign_key that names a column child table `t` lacks: the relation names no foreign key of `t`; the
  // ones `t` declares to parent `p` are listed (or that it declares none).
  std::string missing_foreign_key_column(const schema::TableInfo& t, const schema::TableInfo& p, const std::string& c) {
    std::string declared = foreign_keys_to(t, p.name);
    return fmt::format("relation {}: foreign_key names column {}, which does not exist in {}{}, so it is no foreign "
                       "key of {}: {}; fix foreign_key",
                       t.name, c, name(t), column_hint(t, c), t.name,
                       declared.empty() ? fmt::format("{} declares no foreign key to {}", t.name, p.name)
                                        : fmt::format("the foreign keys of {} that reference {} are {}", t.name, p.name,
                                                      declared));
  }

  void check_foreign_keys() {
    for (auto& f : foreign_key_findings(m_job, m_tree, m_report.source_tables, deletes())) {
      if (f.config) fail_config(std::move(f.message));
      else fail(std::move(f.message));
    }
  }

  // validate only: a RESTRICT / NO ACTION foreign key from outside the job that holds roots (a forgotten child
  // relation, most often). A run leaves such roots in the source, blocked (exit 0), on every run; validate counts
  // them in a sample of the roots matching where: a problem when it holds most of them, a note otherwise.
  void check_held_roots() {
    if (m_purpose != Purpose::validate || !deletes()) return;
    const std::string& sdb = m_cfg.source.database;
    for (const auto& ref : outside_references(m_tree, m_report.source_tables, sdb)) {
      HeldSample s;
      try {
        s = sample_held(m_src, m_job, ref, m_tree, m_report.source_tables, sdb);
      } catch (const db::DbError& e) {
        spdlog::debug("the roots {} holds could not be counted ({})", ref.label(sdb), e.what());
        continue;
      }
      if (s.held == 0) continue;
      const auto& t = m_report.source_tables[static_cast<size_t>(ref.node)];
      std::string advice =
          ascii_lower(ref.fk.database) == ascii_lower(sdb)
              ? fmt::format("add {} to the job: {}; or archive {} first", ref.fk.table, relation_block(m_job.name, ref.fk, t),
                            ref.fk.table)
              : fmt::format("archive {}.{} first (it is in another database, so it cannot join the job)",
                            ref.fk.database, ref.fk.table);
      std::string msg = fmt::format(
          "foreign key {} on {}.{} references {} ON DELETE {} and holds {} of the {}{} roots that match where: a run "
          "leaves each of them in the source, blocked, and tries again on every run; {}",
          ref.fk.name, ref.fk.database, ref.fk.table, name(t), ref.fk.delete_rule, s.held, s.whole ? "" : "first ",
          s.looked_at, advice);
      if (s.held * 2 > s.looked_at) fail(std::move(msg));
      else m_report.notes.push_back(std::move(msg));
    }
  }

  void check_where() {
    if (m_mode == pipeline::Mode::restore) return;  // restore's --where is checked on the archive (preflight_restore)
    const auto& root = m_report.source_tables[0];
    try {
      m_src.query(fmt::format("SELECT 1 FROM {} WHERE ({}) LIMIT 0", sql::qualified(root.database, root.name),
                              m_job.where));
    } catch (const db::DbError& e) {
      std::string msg = fmt::format("jobs.{}.where = \"{}\" is not a valid condition on {}: the server says: {}",
                                    m_job.name, m_job.where, name(root), e.what());
      // 1054 unknown column, 1064 a syntax error: only the config file can fix them (not so a missing privilege).
      if (e.code() == 1054 || e.code() == 1064) fail_config(std::move(msg));
      else fail(std::move(msg));
    }
  }

  void require_privileges(db::Connection& c, const std::vector<std::string>& privs, const std::string& database,
                          const std::string& table, const std::string& where) {
    if (std::string missing = missing_privileges(c, privs, database, table, where); !missing.empty()) {
      fail(std::move(missing));
    }
  }

  // The partition path (pipeline/partition_path.h) detaches with ALTER TABLE on the root table, creates and drops
  // its side table in the source database, and puts rows back with INSERT: refused before anything is recorded,
  // rather than a partition step stuck at its first DDL. Only where the path may run (a RANGE-partitioned root of
  // a job with no relations, partitions = "auto", archive or purge).
  void check_partition_privileges() {
    if (!deletes() || m_job.partitions != "auto" || !m_job.relations.empty()) return;
    const auto& root = m_report.source_tables[0];
    auto parts = pipeline::read_partitions(m_src, root.database, root.name);
    if (parts.empty() || (parts[0].method != "RANGE" && parts[0].method != "RANGE COLUMNS")) return;
    const char* off = "; or set partitions = \"off\" in the job (every row by the row path, which needs neither)";
    if (std::string missing = missing_privileges(m_src, {"ALTER", "INSERT"}, root.database, root.name, "source");
        !missing.empty()) {
      fail(missing + off);
    }
    if (std::string missing = missing_privileges(m_src, {"CREATE", "DROP"}, root.database, "", "source");
        !missing.empty()) {
      fail(missing + off);
    }
  }

  void check_source_privileges() {
    std::vector<std::string> privs = {"SELECT"};
    if (deletes()) privs.push_back("DELETE");
    for (const auto& t : m_report.source_tables) require_privileges(m_src, privs, t.database, t.name, "source");
    check_partition_privileges();
    if (!deletes()) return;
    // The delete's locked read counts the rows that still reference the job from outside (RESTRICT keys).
    std::set<std::string> outside;
    for (const auto& t : m_report.source_tables) {
      for (const auto& fk : t.referenced_by) {
        bool in_job = ascii_lower(fk.database) == ascii_lower(m_cfg.source.database) && m_tree.index_of(fk.table) >= 0;
        if (!in_job && fk.restricts() && outside.insert(fk.database + "." + fk.table).second) {
          require_privileges(m_src, {"SELECT"}, fk.database, fk.table, "source");
        }
      }
    }
  }

  // The delete runs at READ COMMITTED, which InnoDB logs only as rows: a source that logs statements
  // (binlog_format = STATEMENT) refuses it (error 1665) after the batch was copied. Refused before anything moves.
  void check_source_binlog() {
    if (m_mode == pipeline::Mode::copy_only) return;
    try {
      db::RowSet r = m_src.query("SELECT @@GLOBAL.log_bin, @@SESSION.sql_log_bin, UPPER(@@SESSION.binlog_format)");
      if (r.rows() && r.text(0, 0) == "1" && r.text(0, 1) == "1" && r.text(0, 2) == "STATEMENT") {
        fail("the source logs statements (binlog_format = STATEMENT): goarchive deletes at READ COMMITTED, which "
             "InnoDB can only log as rows; set binlog_format = MIXED or ROW on the source (SET GLOBAL binlog_format "
             "= 'ROW', then reconnect)");
      }
    } catch (const db::DbError& e) {
      fail(fmt::format("cannot read log_bin and binlog_format on the source: {}", e.what()));
    }
  }

  // A replica's rows are its primary's: a run that deletes them there leaves them on the primary (never archived
  // from it), and the primary's own later change or delete of them stops the replica's SQL thread (error 1032).
  // archive and purge are refused on a replica (replication configured or running) unless [source] allow_replica
  // says it is meant to be written, and on a read-only server always (its deletes are not meant to happen there).
  // copy-only writes nothing there and dry-run nothing at all: they warn.
  void check_source_not_replica() {
    schema::ReplicaRole role;
    try {
      role = schema::read_replica_role(m_src);
    } catch (const db::DbError& e) {
      fail(fmt::format("cannot tell whether the source is a replica (@@read_only, SHOW SLAVE STATUS): {}", e.what()));
      return;
    }
    const bool writes = m_mode != pipeline::Mode::copy_only;
    const std::string mode = m_mode == pipeline::Mode::purge ? "purge" : "archive";
    const std::string primary = role.channels.size() == 1 ? " " + role.primaries() : "";
    std::string refusal;
    if (writes && role.read_only_any()) {
      std::string switches = role.read_only ? "read_only = ON" : "";
      if (role.super_read_only) switches += std::string(switches.empty() ? "" : ", ") + "super_read_only = ON";
      refusal = fmt::format(
          "{} is read-only ({}){}: {} deletes rows there, and a read-only server is not meant to be "
          "written (only an account with SUPER or READ ONLY ADMIN could); point [source] at the writable "
          "primary{} (allow_replica does not lift this)",
          m_src.label(), switches,
          role.replica() ? fmt::format(", a replica of {} ({})", role.primaries(), role.state()) : "", mode,
          role.replica() ? primary : "");
    } else if (writes && role.replica() && !m_cfg.source.allow_replica) {
      refusal = fmt::format(
          "{} is a replica of {} ({}): {} would delete rows there that the primary still holds, and "
          "the primary's own later change of those rows would stop the replica's SQL thread (error 1032); point "
          "[source] at the primary{}, or, if this server is meant to be written (a replica kept writable on "
          "purpose, or one side of a two-way pair), set allow_replica = true in [source]",
          m_src.label(), role.primaries(), role.state(), mode, primary);
    }
    if (!refusal.empty()) {
      if (m_purpose == Purpose::dry_run) {
        spdlog::warn("a real {} run would be refused: {}", mode, refusal);
      } else {
        fail_config(std::move(refusal));
      }
      return;
    }
    if (writes && !role.status_readable && !role.replica() && !m_src.dialect().replica_hint_from_status_variables()) {
      note_or_warn(fmt::format("cannot tell whether {} is a replica: the account may not read SHOW REPLICA STATUS; "
                               "GRANT REPLICATION CLIENT ON *.* to it, so that preflight refuses archive and purge "
                               "on a replica",
                               m_src.label()));
      return;
    }
    if (!role.replica()) return;
    std::string note =
        writes ? fmt::format("{} is a replica of {} ({}); allow_replica = true in [source] lets {} delete "
                             "rows there: the primary keeps them, and its own later change of them would stop the "
                             "replica's SQL thread (error 1032)",
                             m_src.label(), role.primaries(), role.state(), mode)
               : fmt::format("{} is a replica of {} ({}): copy-only only reads it, but archive and purge "
                             "would be refused there; point [source] at the primary{} to archive, or set "
                             "allow_replica = true in [source] if this replica is meant to be written",
                             m_src.label(), role.primaries(), role.state(), primary);
    note_or_warn(std::move(note));
  }

  // What a run only warns about: a note of validate, a warning of a run or dry-run.
  void note_or_warn(std::string note) {
    if (m_purpose == Purpose::validate) m_report.notes.push_back(std::move(note));
    else spdlog::warn("{}", note);
  }

  // archive proves each delete's commit with a row in the source's goarchive_commits table (commit_proof.h): the
  // run creates the table when it may, and goes on without proofs when it cannot use it. A note, not a failure.
  void check_commit_proof() {
    if (m_mode != pipeline::Mode::archive) return;
    const std::string& sdb = m_cfg.source.database;
    const std::string table = pipeline::CommitProof::table_name(sdb);
    std::string why;
    try {
      bool exists = m_src.scalar(fmt::format("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND "
                                             "TABLE_NAME = 'goarchive_commits'",
                                             sql::quote(sdb)))
                        .has_value();
      std::vector<std::string> missing;
      for (const char* p : exists ? std::vector<const char*>{"SELECT", "INSERT", "DELETE"}
                                  : std::vector<const char*>{"CREATE"}) {
        if (!has_privilege(m_src, p, sdb, "goarchive_commits")) missing.push_back(p);
      }
      if (!missing.empty()) {
        const char* who = exists ? "it exists, but the source account" : "it does not exist and the source account";
        why = fmt::format("{} lacks {} on {}", who, join(missing, ", "), table);
      }
    } catch (const db::DbError& e) {
      why = e.what();
    }
    if (why.empty()) return;
    m_report.notes.push_back(fmt::format(
        "no commit proof: the source table {} cannot be used ({}); after a crash at a delete's commit, roots the "
        "application changed meanwhile become conflicts. Let goarchive create the table (CREATE privilege) or "
        "create it as goarchive(1) shows, with INSERT, SELECT and DELETE granted on it",
        table, why));
  }

  void check_registry_privileges() {
    const std::string& js = m_cfg.destination.job_schema;
    std::vector<std::string> privs = {"SELECT", "INSERT", "UPDATE", "DELETE"};
    if (!schema::database_exists(*m_dst, js)) privs.push_back("CREATE");
    require_privileges(*m_dst, privs, js, "", "destination");
  }

  void check_connections(db::Connection& c, int needed, const std::string& where) {
    try {
      auto max = std::stoll(c.scalar("SELECT @@max_connections").value_or("0"));
      db::RowSet r = c.query("SHOW GLOBAL STATUS LIKE 'Threads_connected'");
      long long connected = r.rows() ? std::stoll(r.text(0, 1)) : 0;
      long long free_slots = max - connected;
      if (free_slots < needed - 1) {
        fail(fmt::format("the {} allows max_connections = {} and {} are in use: a run needs at least {} {} "
                         "connections ({} more than the one preflight uses); raise max_connections or close idle "
                         "sessions",
                         where, max, connected, needed, where, needed - 1));
      }
    } catch (const db::DbError& e) {
      fail(fmt::format("cannot read max_connections on the {}: {}", where, e.what()));
    }
  }

  // One registry and one source per archive database (tracking/archive_owner.h): the record a run left there.
  void check_archive_owner() {
    try {
      auto found = tracking::read_owner(*m_dst, m_cfg.destination.database);
      if (!found) return;
      tracking::ArchiveOwner wanted{m_cfg.destination.job_schema, schema::read_server_identity(m_src),
                                    m_cfg.source.database};
      found->server.case_insensitive_names = wanted.server.case_insensitive_names;
      if (std::string problem = tracking::owner_problem(m_cfg.destination.database, *found, wanted); !problem.empty()) {
        fail_config(problem);
      }
    } catch (const db::DbError& e) {
      spdlog::debug("the archive's owner record could not be read ({}); the run checks it again", e.what());
    }
  }

  // The destination must not be the source's own data: the same server (by its identity, however it is reached)
  // or a replica of it / the server it replicates from, with the same database name. Archiving there would copy
  // rows onto themselves (or onto their replicated copies) and then delete them. Returns true when it is.
  bool check_not_source_data() {
    const std::string& sdb = m_cfg.source.database;
    const std::string& ddb = m_cfg.destination.database;
    schema::ServerIdentity s, d;
    try {
      s = schema::read_server_identity(m_src);
      d = schema::read_server_identity(*m_dst);
    } catch (const db::DbError& e) {
      fail(fmt::format("cannot read the identity of the source and destination servers (@@server_id, @@hostname, "
                       "@@port, @@datadir, GTID state): {}; grant the account access to these variables",
                       e.what()));
      return false;
    }
    schema::DataRelation rel = schema::relate(s, sdb, d, ddb);
    if (!rel.same_data) return false;
    std::string who = fmt::format("server_id {}, {}:{}, datadir {}", d.server_id, d.hostname, d.port, d.datadir);
    if (!d.server_uuid.empty()) who = "server_uuid " + d.server_uuid + ", " + who;
    if (rel.same_server) {
      fail_config(fmt::format("the destination database {} on {} is the source database itself (the same server: {}): "
                              "archiving would copy its rows onto themselves and then delete them; set [destination] "
                              "database to another database (for example {}_archive)",
                              ddb, m_dst->label(), who, sdb));
    } else {
      fail_config(fmt::format("the destination database {} on {} holds the source's own data: that server and the "
                              "source {} replicate one from the other (its GTID state holds the other's "
                              "transactions; {}), so archived rows would be written into a copy of the source; point "
                              "[destination] at a server outside the source's replication topology",
                              ddb, m_dst->label(), m_src.label(), who));
    }
    return true;
  }

  void check_destination() {
    const std::string& ddb = m_cfg.destination.database;
    if (ddb.empty()) {
      fail("[destination] has no database; set database = \"<archive schema>\" in [destination]");
      return;
    }
    if (!schema::database_exists(*m_dst, ddb)) {
      fail(fmt::format("the destination database {} does not exist on {}; create it with the job's archive tables: "
                       "{} (or by hand: CREATE DATABASE {})",
                       ddb, m_dst->label(), schema_apply_command(), sql::ident(ddb)));
      return;
    }
    // A table the source lacks is a typo in the config, already reported: until it is fixed, the archive tables
    // would be compared with a job that is not the one meant (its foreign keys would seem to leave the job).
    if (std::any_of(m_report.source_tables.begin(), m_report.source_tables.end(),
                    [](const auto& t) { return !t.exists; })) {
      return;
    }
    std::vector<std::string> names;
    for (const auto& s : m_report.source_tables) names.push_back(s.name);
    std::vector<schema::TableInfo> dst_tables = schema::read_tables(*m_dst, ddb, names);
    for (size_t i = 0; i < m_report.source_tables.size(); ++i) {
      check_destination_table(m_report.source_tables[i], dst_tables[i], ddb);
    }
  }

  // `goarchive schema -c FILE -j JOB --apply`: creates the archive database and tables a job lacks.
  std::string schema_apply_command() const {
    std::string path = m_cfg.path;
    bool plain = std::all_of(path.begin(), path.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-';
    });
    if (!plain) {  // quoted for a POSIX shell, so that the command can be pasted as it is
      std::string q = "'";
      for (char c : path) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      path = q + "'";
    }
    return fmt::format("goarchive schema{} -j {} --apply", path.empty() ? "" : " -c " + path, m_job.name);
  }

  // The archive table of source table `s` in destination database `ddb`: a base table without INSERT triggers,
  // with the source's columns, the privileges the copy needs, and (foreign_key_checks) foreign keys it can meet.
  void check_destination_table(const schema::TableInfo& s, const schema::TableInfo& d, const std::string& ddb) {
    if (!d.exists) {
      fail(fmt::format("table {}.{} does not exist on the destination; create the job's missing archive tables with "
                       "{} (or create it there with the statement that SHOW CREATE TABLE {} prints on the source)",
                       ddb, s.name, schema_apply_command(), sql::qualified(s.database, s.name)));
      return;
    }
    if (d.table_type != "BASE TABLE") {
      fail(fmt::format("{}.{} on the destination is a {}, not a base table: archived rows would be written through "
                       "it into whatever it shows (a view onto the source tables writes them back into the "
                       "source); replace it with a table created by the statement that SHOW CREATE TABLE {} prints "
                       "on the source",
                       ddb, s.name, ascii_lower(d.table_type), sql::qualified(s.database, s.name)));
      return;
    }
    if (d.has_trigger("INSERT")) {
      fail(fmt::format("table {}.{} has an INSERT trigger on the destination: it would fire for every archived row "
                       "and could change what is verified; drop it",
                       ddb, s.name));
    }
    check_destination_columns(s, d, ddb);
    if (m_cfg.destination.foreign_key_checks) check_destination_foreign_keys(d);
    // restore only reads and (without --keep-archive) deletes here: its own preflight asks for DELETE.
    if (m_mode == pipeline::Mode::restore) require_privileges(*m_dst, {"SELECT"}, ddb, s.name, "destination");
    else require_privileges(*m_dst, {"SELECT", "INSERT", "DELETE"}, ddb, s.name, "destination");
  }

  // Every copied source column is on the destination with the same type and collation; an extra destination
  // column is one the server fills (a default, NULL or a generated column), never an AUTO_INCREMENT one.
  void check_destination_columns(const schema::TableInfo& s, const schema::TableInfo& d, const std::string& ddb) {
    for (const auto& c : s.columns) {
      if (c.generated) continue;
      const schema::Column* dc = d.column(c.name);
      if (!dc || dc->generated) {
        fail(fmt::format("destination table {}.{} has no column {} (source type {}); add it: ALTER TABLE {} ADD "
                         "COLUMN {} {}",
                         ddb, s.name, c.name, c.column_type, sql::qualified(ddb, s.name), sql::ident(c.name),
                         c.column_type));
      } else if (std::string json = db::Dialect::json_storage_difference(c.column_type, dc->column_type);
                 !json.empty()) {
        fail(fmt::format("column {}.{} is {} on the destination but {} on the source: {}", s.name, c.name,
                         dc->column_type, c.column_type, json));
      } else if (ascii_lower(dc->column_type) != ascii_lower(c.column_type) || dc->collation != c.collation) {
        fail(fmt::format("column {}.{} is {}{} on the destination but {}{} on the source; make the destination "
                         "column the same type",
                         s.name, c.name, dc->column_type, dc->collation.empty() ? "" : " " + dc->collation,
                         c.column_type, c.collation.empty() ? "" : " " + c.collation));
      }
    }
    // The copy names its columns, so the server fills an extra column that has a default or allows NULL.
    for (const auto& dc : d.columns) {
      if (dc.generated || s.column(dc.name) || (dc.server_fills() && !dc.auto_increment)) continue;
      if (dc.auto_increment) {
        fail(fmt::format("destination table {}.{} has an extra AUTO_INCREMENT column {} that the source lacks: the "
                         "archive's rows must keep the source's keys; drop it: ALTER TABLE {} DROP COLUMN {}",
                         ddb, s.name, dc.name, sql::qualified(ddb, s.name), sql::ident(dc.name)));
      } else {
        fail(fmt::format("destination table {}.{} has an extra column {} that the source lacks, NOT NULL without a "
                         "default, so the server cannot fill it for archived rows; give it a default: ALTER TABLE "
                         "{} ALTER COLUMN {} SET DEFAULT <value>",
                         ddb, s.name, dc.name, sql::qualified(ddb, s.name), sql::ident(dc.name)));
      }
    }
  }

  // With foreign_key_checks on, an archived row must find its parent in the archive: every destination foreign key
  // must point at a table of this job (copied parent-first, so the parent is there).
  void check_destination_foreign_keys(const schema::TableInfo& d) {
    const std::string& ddb = m_cfg.destination.database;
    for (const auto& fk : d.references) {
      bool in_job = fk.ref_database == ddb && std::any_of(m_tree.nodes().begin(), m_tree.nodes().end(), [&](const auto& n) {
                      return ascii_lower(n.table) == ascii_lower(fk.ref_table);
                    });
      if (in_job) continue;
      fail(fmt::format("destination foreign key {} of {}.{} references {}.{}, which is not a table of job {}: with "
                       "foreign_key_checks = true every archived row would need its parent there; set "
                       "foreign_key_checks = false in [destination], or drop that foreign key on the archive: ALTER "
                       "TABLE {} DROP FOREIGN KEY {}",
                       fk.name, ddb, d.name, fk.ref_database, fk.ref_table, m_job.name, sql::qualified(ddb, d.name),
                       sql::ident(fk.name)));
    }
  }

  // Key columns identify rows in the log, the verification and the delete: an approximate number's text does not
  // round-trip, and NULL never equals NULL.
  void check_key_column(const schema::TableInfo& t, const std::string& column, const std::string& role) {
    const schema::Column* c = t.column(column);
    // The keyset walk continues after the last root with `key > 'text'`, while an ENUM or SET index orders by
    // the member's position: the two orders differ, and the walk would end early, skipping matching roots.
    if (c && role == "the root key" && (c->data_type == "enum" || c->data_type == "set")) {
      fail_config(fmt::format("column {}.{} ({}) is {}: its index orders by the member's position, not by its text, "
                              "so the keyset walk would skip roots; set the job's primary_key to columns without "
                              "ENUM or SET, or change the column's type",
                              name(t), c->name, role, c->column_type));
      return;
    }
    if (!c || !c->approximate()) return;
    if (!m_reported_key_columns.insert(ascii_lower(name(t) + "." + column)).second) return;
    fail(fmt::format("column {}.{} ({}) is {}, an approximate number: its text form does not round-trip, so goarchive "
                     "could not find the same row again to verify or delete it; change the column to an exact type "
                     "(an integer or DECIMAL)",
                     name(t), c->name, role, c->column_type));
  }

  const config::Config& m_cfg;
  const config::Job& m_job;
  const plan::Tree& m_tree;
  pipeline::Mode m_mode;
  Purpose m_purpose;
  db::Connection& m_src;
  db::Connection* m_dst;
  PreflightReport m_report;
  std::set<std::string> m_reported_key_columns;
};

}  // namespace

PreflightReport preflight(const config::Config& cfg, const config::Job& job, const plan::Tree& tree,
                          pipeline::Mode mode, db::Connection& source, db::Connection* destination,
                          Purpose purpose) {
  return Checker(cfg, job, tree, mode, source, destination, purpose).run();
}

void require(const PreflightReport& report, const std::string& job) {
  if (report.ok()) return;
  std::string msg = fmt::format("preflight refused job \"{}\" before any data moved ({} problem{}):", job,
                                report.failures.size(), report.failures.size() == 1 ? "" : "s");
  for (const auto& f : report.failures) msg += "\n  - " + f;
  if (report.config_failures == report.failures.size()) throw ConfigError(msg);
  throw PreflightError(msg);
}

}  // namespace goarchive::app

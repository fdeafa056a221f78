// archive, copy-only and purge: the run as an object whose phases are named methods (STYLE.md), read in
// order by Run::execute: connect -> preflight -> acquire_locks -> guard -> start_run -> batch_loop -> finish ->
// report. The parts it drives own the details: RunControl (may the loop go on?), Heartbeat, the lock helpers,
// the work guard and the pipeline's Engine.
#include <unistd.h>

#include <chrono>
#include <exception>
#include <future>
#include <map>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/heartbeat.h"
#include "app/hooks.h"
#include "app/metrics_file.h"
#include "app/preflight.h"
#include "app/preflight_restore.h"
#include "app/control_socket.h"
#include "app/run_control.h"
#include "app/run_locks.h"
#include "app/session.h"
#include "app/work_guard.h"
#include "control/throttle.h"
#include "plan/sql.h"
#include "replication/gate.h"
#include "report/summary.h"
#include "schema/catalog.h"
#include "tracking/archive_owner.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::app {

pipeline::Mode to_pipeline(int mode) {
  switch (static_cast<Mode>(mode)) {
    case Mode::archive: return pipeline::Mode::archive;
    case Mode::copy_only: return pipeline::Mode::copy_only;
    case Mode::purge: return pipeline::Mode::purge;
    case Mode::restore: return pipeline::Mode::restore;
  }
  return pipeline::Mode::archive;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// READ COMMITTED on both data sessions: deletes by exact key take record locks only (no gap locks), and on the
// destination two jobs starting at the same moment never deadlock on the registry's gap locks; every state
// write is guarded explicitly (seed 000).
void prepare_data_sessions(const config::Config& cfg, db::Connection& src, db::Connection& dst) {
  src.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  dst.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  dst.execute(std::string("SET SESSION foreign_key_checks = ") + (cfg.destination.foreign_key_checks ? "1" : "0"));
}

// EXPLAIN's rows for the roots matching `where`, only when the optimizer reads them from an index on the
// condition: for a full scan (type ALL, index) they are the table's size, not the matching roots' (a run
// showed "roots 30000/~104140 (29%)" and finished there).
std::optional<unsigned long long> explained_roots(db::Connection& src, const std::string& from, const std::string& where) {
  db::RowSet r = src.query(fmt::format("EXPLAIN SELECT 1 FROM {} WHERE ({})", from, where));
  std::optional<size_t> type, rows;
  for (size_t c = 0; c < r.cols(); ++c) {
    if (r.names()[c] == "type") type = c;
    if (r.names()[c] == "rows") rows = c;
  }
  if (r.rows() != 1 || !type || !rows || r.is_null(0, *type) || r.is_null(0, *rows)) return std::nullopt;
  const std::string& access = r.text(0, *type);
  if (access != "range" && access != "ref" && access != "eq_ref" && access != "const" && access != "ref_or_null") {
    return std::nullopt;
  }
  return std::stoull(r.text(0, *rows));
}

// The roots that match `where`, for the progress total and its ETA: a COUNT(*) the server stops after 2 s (a
// scan of a large table must not delay the run), else EXPLAIN's estimate when it comes from an index on the
// condition, else unknown (nullopt: the progress shows "?" rather than a wrong total).
std::optional<unsigned long long> estimate_roots(db::Connection& src, const std::string& database,
                                                 const config::Job& job) {
  std::string from = sql::qualified(database, job.root_table);
  std::string count =
      src.dialect().time_limited(fmt::format("SELECT COUNT(*) FROM {} WHERE ({})", from, job.where), 2000);
  // Only the display depends on it: any error (a lost connection included, which the batch loop meets and
  // handles next) leaves the total unknown.
  try {
    if (auto n = src.scalar(count)) return std::stoull(*n);
  } catch (const std::exception& e) {
    spdlog::debug("counting the roots to archive: {}; trying the optimizer's estimate", e.what());
  }
  try {
    auto n = explained_roots(src, from, job.where);
    if (!n) spdlog::debug("no honest estimate of the roots to archive: the progress shows no total");
    return n;
  } catch (const std::exception& e) {
    spdlog::debug("no row estimate: {}", e.what());
  }
  return std::nullopt;
}

// The job as this run sees it: restore reads the archive with its own --where.
config::Job run_job_of(const config::Config& cfg, const RunOptions& options) {
  config::Job job = cfg.job(options.job);
  if (options.mode == Mode::restore) job.where = options.where;
  return job;
}

class Run {
public:
  Run(const config::Config& cfg, const RunOptions& options)
      : m_cfg(cfg), m_options(options), m_job(run_job_of(cfg, options)), m_tree(m_job),
        m_mode(to_pipeline(static_cast<int>(options.mode))), m_command(to_string(options.mode)),
        m_registry(cfg.destination.job_schema) {}

  // The whole run; returns its exit code, throws goarchive::Error for refusals and failures.
  int execute() {
    RunControl::install_signal_handlers();
    check_control_socket();
    connect();
    preflight();
    acquire_locks();
    guard();
    open_control_socket();
    start_run();
    int code = batch_loop();
    // A clean stop by the throttle (critical_threads_running) is "try again later": its one message on stderr
    // too, like every exit 4. The summary and the registry already have it.
    if (code == k_exit_busy) {
      throw BusyError(m_info.reason + "; the run stopped cleanly at a batch boundary and resumes on its rerun");
    }
    return code;
  }
  bool metrics_written() const { return m_metrics_written; }
  bool summary_printed() const { return m_summary_printed; }
  // What the hooks are told: the finished run's summary, or (refused or failed before it started) `error`.
  HookOutcome outcome(int code, const std::string& error) const {
    HookOutcome o;
    const bool finished = !m_info.job.empty();
    report::RunInfo info = finished ? m_info : report::RunInfo{m_job.name, m_command, error, 0, code, seconds(), 0};
    info.exit_code = code;
    o.job = info.job;
    o.command = info.mode;
    o.reason = finished ? info.reason : error;
    o.exit_code = code;
    o.run_id = info.run_id;
    o.conflicts = m_stats.roots_conflict;
    o.blocked = m_stats.roots_blocked;
    for (const auto& t : m_stats.tables) {
      o.copied.emplace_back(t.table, t.copied);
      o.deleted.emplace_back(t.table, t.deleted);
    }
    o.summary_json = report::summary_json(info, m_stats);
    return o;
  }
  double seconds() const { return since(m_started); }

private:
  void connect() {
    std::string tag = sql::tag(m_job.name, 0);
    m_src = app::connect(m_cfg.source, "source data", tag);
    m_dst = app::connect(m_cfg.destination, "destination data", tag);
    prepare_data_sessions(m_cfg, *m_src, *m_dst);
    if (restores()) {
      // restore writes the source: its foreign keys refuse a row whose parent outside the job is gone.
      m_src->execute("SET SESSION foreign_key_checks = 1");
      // It deletes from the archive: a multi-table DELETE by alias resolves it in the default database.
      m_dst->execute("USE " + sql::ident(m_cfg.destination.database));
    }
    connect_marks(tag);
    connect_reads(tag);
  }

  bool restores() const { return m_mode == pipeline::Mode::restore; }

  // In the modes that delete, the next batch's plain read runs on a source session of its own, beside the delete
  // of the batch before it on the data session; set up as the data session is.
  void connect_reads(const std::string& tag) {
    if (m_mode == pipeline::Mode::copy_only) return;
    if (restores()) {
      // restore reads the next batch from the archive beside the removal of the one before.
      m_src_reads = app::connect(m_cfg.destination, "archive reads", tag);
      m_src_reads->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
      return;
    }
    m_src_reads = app::connect(m_cfg.source, "source reads", tag);
    m_src_reads->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  }

  // The source delete records its decision on a destination session of its own (it runs beside the copy).
  void connect_marks(const std::string& tag) {
    m_marks = app::connect(m_cfg.destination, "destination marks", tag);
    m_marks->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  }

  void preflight() {
    PreflightReport pf = app::preflight(m_cfg, m_job, m_tree, m_mode, *m_src, m_dst.get());
    if (restores()) check_restore(m_cfg, m_job, m_tree, m_options.keep_archive, *m_src, *m_dst, pf);
    require(pf, m_job.name);
    m_tables = pipeline::describe(m_tree, pf.source_tables, m_job, m_cfg.source.database, m_cfg.destination.database);
    if (restores()) m_tables = pipeline::reversed(std::move(m_tables));
  }

  // The schema lock (new registry only), the job lock, then the table locks.
  void acquire_locks() {
    m_dest_lock = std::make_unique<locks::LockSession>(m_cfg.destination, "destination lock");
    ensure_registry(m_cfg, *m_dest_lock, *m_dst, m_registry);
    auto jl = job_locks(m_cfg, m_job);
    acquire_job_lock(*m_dest_lock, jl, m_job);
    m_src_lock = std::make_unique<locks::LockSession>(m_cfg.source, "source lock");
    m_table_locks = table_locks(m_cfg, m_tree);
    acquire_table_locks(*m_src_lock, m_table_locks);
    fault::point("after_locks");
  }

  // The job's registry row and the unfinished-work guard, with both lock sets held.
  void guard() {
    m_identity = source_identity(*m_src, m_cfg.source);
    std::vector<std::pair<std::string, std::string>> table_names;
    for (const auto& l : m_table_locks) {
      m_table_keys.push_back(l.name.substr(std::string(locks::prefix(locks::LockKind::table)).size()));
      table_names.emplace_back(l.a, l.b);
    }
    for (int attempt = 1;; ++attempt) {
      try {
        m_jobrow = m_registry.ensure_job(*m_dst, m_job.name, m_command, m_identity, m_cfg.destination.database,
                                         m_job.root_table, table_names, m_table_keys);
        break;
      } catch (const db::DbError& e) {
        if (!e.retryable() || e.connection_lost() || attempt == 5) throw;
        spdlog::debug("recording job {} in the registry: {} (retry {})", m_job.name, e.what(), attempt);
        std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
      }
    }
    m_registry.restrict_to_scope(root_scope(m_cfg, m_job));
    tracking::check_recorded_source(m_registry, *m_dst, m_jobrow, m_identity, root_scope(m_cfg, m_job));
    check_guard(m_registry, *m_dst, m_jobrow.id, m_table_keys, m_identity);
    claim_archive();
    if (restores()) check_sole_archiver(m_cfg, m_job, *m_dst);
  }

  // One registry and one source per archive database (tracking/archive_owner.h); purge writes none of its rows.
  void claim_archive() {
    if (m_mode == pipeline::Mode::purge) return;
    tracking::claim_archive(*m_dst, m_cfg.destination.database,
                            {m_cfg.destination.job_schema, schema::read_server_identity(*m_src), m_cfg.source.database});
  }

  // [control] socket: its path is judged before anything is touched (exit 2), the socket made once the job's locks
  // are held (a live socket there is then another job's run), and removed when the run ends (finish).
  void check_control_socket() {
    if (!m_cfg.control.socket.empty()) {
      ControlSocket::check_path(config::control_socket_path(m_cfg.control.socket, m_job.name));
    }
  }
  void open_control_socket() {
    m_steering.describe(m_job.name, m_command, m_job.processing.batch_size, m_job.processing.sleep);
    if (m_cfg.control.socket.empty()) return;
    m_control_socket = std::make_unique<ControlSocket>(config::control_socket_path(m_cfg.control.socket, m_job.name),
                                                       m_steering);
  }

  void start_run() {
    m_run_id = m_registry.start_run(*m_dst, m_jobrow, m_command, m_src_lock->connection_id(),
                                    m_dest_lock->connection_id());
    m_tag = sql::tag(m_job.name, static_cast<long long>(m_run_id));
    for (db::Connection* c :
         {m_src.get(), m_dst.get(), m_marks.get(), m_src_reads.get(), &m_src_lock->connection(),
          &m_dest_lock->connection()}) {
      if (c) c->set_tag(m_tag);
    }
    spdlog::info("{} job={} run={} started: {} table(s), batch_size {}, verification {}", m_command, m_job.name,
                 m_run_id, m_tree.nodes().size(), m_job.processing.batch_size,
                 config::to_string(m_job.processing.verification));
    m_heartbeat = std::make_unique<Heartbeat>(*m_src_lock, *m_dest_lock,
                                              app::connect(m_cfg.destination, "destination registry", m_tag),
                                              m_registry, m_jobrow.id, m_run_id);
    // The count is for the display only: --no-progress skips it (up to 2 s of the source's time at the start).
    m_progress = std::make_unique<report::Progress>(
        m_options.progress, ::isatty(STDERR_FILENO) != 0, m_job.processing.progress_interval,
        m_options.progress ? estimate_roots(restores() ? *m_dst : *m_src,
                                            restores() ? m_cfg.destination.database : m_cfg.source.database, m_job)
                           : std::nullopt);
    m_control = std::make_unique<RunControl>(m_job, m_options.max_runtime, *m_progress);
    m_steering.set_run_id(m_run_id);
    m_control->set_steering(&m_steering);
    m_control->set_lock_check([this] {
      if (m_heartbeat->lost()) throw LockLost("source or destination");
    });
    if (m_mode != pipeline::Mode::copy_only && m_cfg.replication.enabled) {
      auto gate = std::make_shared<replication::Gate>(m_cfg.replication);
      m_control->add_gate({"replication", [gate] { return gate->check(); }, gate->check_interval(), gate->max_hold()});
    }
    // One source session for the checks made at batch boundaries: the data session may be busy on the worker.
    m_src_checks = app::connect(m_cfg.source, "source checks", m_tag);
    add_drift_check();
    if (m_mode != pipeline::Mode::copy_only && m_cfg.throttle.enabled()) add_throttle();
  }

  // The definition of every table of the job (pipeline/definitions.h), compared at every batch boundary: a column
  // added, dropped or retyped mid-run stops the run cleanly before a batch could copy rows without it. A mode
  // that deletes checks the source inside each delete transaction instead, under the metadata locks of its locked
  // reads, so that no batch is ever deleted after a change; the boundary then stops on what that check found.
  // The destination is checked at every boundary too, or once a second when the verification is sha256: that
  // compares every copied row byte for byte with the source row before anything is deleted, so a batch copied
  // into a changed table fails whole instead (destination_change then names the change); the check only finds it
  // earlier. count and none compare no values, so there it runs at every boundary.
  void add_drift_check() {
    m_definitions = std::make_shared<pipeline::DefinitionGuard>(
        m_cfg.source.database, pipeline::read_definitions(*m_src_checks, m_cfg.source.database, m_tables), "source");
    if (m_mode != pipeline::Mode::purge) {
      m_dst_definitions = std::make_shared<pipeline::DefinitionGuard>(
          m_cfg.destination.database, pipeline::read_definitions(*m_dst, m_cfg.destination.database, m_tables),
          "destination");
    }
    // restore deletes from the archive, not the source: its source definitions are checked at every boundary.
    const bool deletes = m_mode != pipeline::Mode::copy_only && !restores();
    const auto every = std::chrono::duration<double>(
        m_job.processing.verification == config::VerifyMethod::sha256 ? 1.0 : 0.0);
    auto checked = std::make_shared<Clock::time_point>();  // the clock's epoch: the first boundary checks
    m_control->set_drift_check([this, deletes, every, checked]() -> std::optional<std::string> {
      if (deletes) {
        if (auto why = m_definitions->found()) return why;
      } else if (auto why = m_definitions->check(*m_src_checks, m_tables)) {
        return why;
      }
      if (!m_dst_definitions || Clock::now() - *checked < every) return std::nullopt;
      *checked = Clock::now();
      // On the data session, which is the main thread's own between batches (restore's removal runs on it beside
      // the next batch: there, on the archive reads session, the main thread's).
      return m_dst_definitions->check(restores() ? *m_src_reads : *m_dst, m_tables);
    });
  }

  // After a batch failed: a change of a destination table's definition since the start, which is then the cause
  // to report rather than the statement it broke. Nothing when there is none or it cannot be read.
  std::optional<std::string> destination_change() {
    if (!m_dst_definitions) return std::nullopt;
    try {
      return m_dst_definitions->check(*m_dst, m_tables);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // Ends the run as failed with `e`, or with the destination's definition change that explains it.
  [[noreturn]] void fail_batch(const std::exception& e) {
    if (auto changed = destination_change()) {
      std::string why = *changed + " (the batch under way failed on it and rolled back: " + e.what() + ")";
      finish("failed", k_exit_failed, why);
      throw Error(why);
    }
    finish("failed", k_exit_failed, e.what());
    throw;
  }

  // [throttle] reads the source's load on a connection of its own: the data session may be busy on the source
  // worker at a batch boundary.
  void add_throttle() {
    auto throttle = std::make_shared<control::Throttle>(m_cfg.throttle);
    m_control->add_gate({"throttle", [this, throttle] { return throttle->hold_reason(*m_src_checks); },
                         throttle->check_interval(), throttle->max_hold()});
    m_control->set_critical_check([this, throttle]() -> std::optional<std::string> {
      std::string why;
      if (throttle->critical(*m_src_checks, why)) return why;
      return std::nullopt;
    });
  }

  pipeline::Hooks hooks() {
    pipeline::Hooks h;
    h.before_commit = [this] { check_locks_before_commit(); };
    h.boundary = [this](const char*) { return m_control->may_continue(); };
    h.gate = [this](const char* phase) { m_control->hold_while_gated(phase); };
    h.progress = [this](const pipeline::Stats& s, const char* phase) { m_control->show(s, phase); };
    return h;
  }

  // The last check before a commit: the heartbeat's verdict and a round trip on each lock session, the two side
  // by side (each session is its own connection). The commit follows at once; a lock lost between this check
  // and the commit is found by the next check.
  void check_locks_before_commit() {
    if (m_heartbeat->lost()) throw LockLost("source or destination");
    auto src_held = std::async(std::launch::async, [this] { return m_src_lock->holds_all(); });
    bool dest_held = m_dest_lock->holds_all();
    if (!src_held.get()) throw LockLost("source");
    if (!dest_held) throw LockLost("destination");
  }

  bool locks_ok() { return !m_heartbeat->lost() && m_src_lock->holds_all() && m_dest_lock->holds_all(); }

  // Runs the engine; a retryable error (deadlock, lock wait, lost connection) retries with the run's counts.
  int batch_loop() {
    for (int retries = 0;; ++retries) {
      // restore swaps the two ends: the archive is read and emptied, the source written.
      pipeline::Engine engine(m_mode, m_job, m_tables, restores() ? *m_dst : *m_src, restores() ? *m_src : *m_dst,
                              m_registry, m_jobrow.id, m_run_id, root_scope(m_cfg, m_job), hooks());
      engine.set_marks_connection(*m_marks);  // restore: its claims, beside the archive removal under way
      if (m_src_reads) engine.set_reads_connection(*m_src_reads);
      engine.use_commit_proofs(m_cfg.source.database);
      if (m_mode != pipeline::Mode::copy_only && !restores()) engine.guard_definitions(*m_definitions);
      if (restores() && m_options.keep_archive) engine.keep_archive();
      if (retries > 0) engine.carry_over(m_stats);  // a retry continues the run's counts
      try {
        bool completed = engine.run();
        take_stats(engine, retries);
        return finished(completed);
      } catch (const db::DbError& e) {
        take_stats(engine, retries);
        if (e.retryable() && retries < 10 && !m_control->signalled() && locks_ok()) {
          back_off(e, retries + 1);
          continue;
        }
        if (!locks_ok()) {
          LockLost lost(!m_src_lock->holds_all() ? "source" : "destination");
          finish("failed", k_exit_failed, lost.what());
          throw lost;
        }
        fail_batch(e);
      } catch (const Error& e) {
        take_stats(engine, retries);
        if (e.exit_code() == k_exit_failed) fail_batch(e);
        finish(e.exit_code() == k_exit_busy ? "stopped" : "failed", e.exit_code(), e.what());
        throw;
      }
    }
  }

  void take_stats(const pipeline::Engine& engine, int retries) {
    m_stats = engine.stats();
    m_stats.t_held = m_control->held_seconds("replication");
    m_stats.retries = static_cast<unsigned long long>(retries);
  }

  void back_off(const db::DbError& e, int retry) {
    double backoff = std::min(30.0, 0.5 * (1 << std::min(retry, 6)));
    spdlog::warn("retryable error ({}), retry {} of 10 in {:.1f}s: {}", e.code(), retry, backoff, e.what());
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    if (!e.connection_lost()) return;
    try {
      m_src = app::connect(m_cfg.source, "source data", m_tag);
      m_dst = app::connect(m_cfg.destination, "destination data", m_tag);
      prepare_data_sessions(m_cfg, *m_src, *m_dst);
      connect_marks(m_tag);
      connect_reads(m_tag);
      m_src_checks = app::connect(m_cfg.source, "source checks", m_tag);
      m_heartbeat->reconnect(app::connect(m_cfg.destination, "destination registry", m_tag));
    } catch (const std::exception& again) {
      finish("failed", k_exit_failed, again.what());
      throw;
    }
  }

  // The engine returned: finished its work, or stopped cleanly at a boundary.
  int finished(bool completed) {
    std::string reason = m_control->stop_reason();
    int code = m_control->stop_code();
    if (!completed && code == k_exit_ok) reason += "; stopped cleanly at a batch boundary, the next run continues";
    if (completed) {
      code = k_exit_ok;
      reason = m_stats.roots == 0 && m_stats.partitions_done == 0 ? "nothing to do" : "finished";
      unsigned long long left = m_stats.roots_changed + m_stats.roots_withdrawn;
      if (left > 0) {
        // A normal outcome on a busy table: the next run archives them. Exit 0 with a warning.
        reason = fmt::format("finished; {} root(s) changed in the source after their copy and were left there for "
                             "the next run",
                             left);
        spdlog::warn("{}", reason);
      }
      if (m_stats.roots_blocked > 0) {
        // Not an error either: they go once what holds them is archived too.
        // A run that moved nothing because every root was blocked says so first.
        const bool all = m_stats.roots_done == 0 && m_stats.roots_blocked == m_stats.roots;
        std::string blocked = fmt::format("{}{} root(s) blocked and left in the source: a parent staying there, a "
                                          "table outside the job still holding their tree, or a row of it the "
                                          "archive holds already (see the summary)",
                                          all ? "nothing moved: all " : "", m_stats.roots_blocked);
        reason += "; " + blocked;
        if (m_stats.roots_blocked > pipeline::Stats::k_blocked_logged) {
          blocked += fmt::format("; the first {} are logged above, the summary names 20 and its JSON up to {}",
                                 pipeline::Stats::k_blocked_logged, pipeline::Stats::k_blocked_kept);
        }
        spdlog::warn("{}", blocked);
      }
    }
    if (restores()) {
      if (completed) reason = restore_reason();
      if (m_stats.roots_kept > 0 || m_stats.roots_conflict > 0) code = k_exit_failed;
    } else if (m_stats.roots_conflict > 0) {
      reason = conflict_reason();
      code = k_exit_failed;
      spdlog::error("{}", reason);
    }
    spdlog::info("run {} ended: {}", m_run_id, reason);
    finish(completed ? "finished" : "stopped", code, reason);
    return code;
  }

  // restore's one-line outcome: how many roots went back, and each kind of root that did not, with examples.
  std::string restore_reason() const {
    std::string reason = m_stats.roots == 0 ? "nothing to do: no archived root matches --where"
                                            : fmt::format("finished; {} root(s) restored", m_stats.roots_done);
    if (m_stats.roots_present > 0) {
      reason += fmt::format("; {} root(s) were in the source already with the same content", m_stats.roots_present);
    }
    if (m_stats.roots_blocked > 0) {
      reason += fmt::format("; {} root(s) wait in the archive for a parent that stays archived", m_stats.roots_blocked);
    }
    if (m_stats.roots_kept > 0) {
      std::vector<std::string> shown(m_stats.blocked.begin(),
                                     m_stats.blocked.begin() + static_cast<long>(std::min<size_t>(3, m_stats.blocked.size())));
      reason += fmt::format("; {} root(s) could not be restored and stay in the archive: {}", m_stats.roots_kept,
                            join(shown, "; "));
      spdlog::error("{}", reason);
    }
    if (m_stats.roots_conflict > 0) {
      reason += fmt::format("; {} root(s) are back in the source but their archived copy was kept: {}",
                            m_stats.roots_conflict, join(m_stats.conflicts, "; "));
      spdlog::error("{}", reason);
    }
    return reason;
  }

  // One line however many conflicts: the first five keys; `goarchive jobs` lists them too.
  std::string conflict_reason() const {
    constexpr size_t k_shown = 5;
    std::vector<std::string> shown(m_stats.conflicts.begin(),
                                   m_stats.conflicts.begin() +
                                       static_cast<long>(std::min(k_shown, m_stats.conflicts.size())));
    std::string keys = join(shown, "; ");
    if (m_stats.roots_conflict > shown.size()) {
      keys += fmt::format(" and {} more (goarchive jobs lists them)", m_stats.roots_conflict - shown.size());
    }
    return fmt::format("{} root(s) are in conflict: the source and the archive hold different versions of their rows "
                       "and nothing proves which one is current, so both are kept: {}. "
                       "Compare the two versions, delete the wrong one (from the archive or from the source); the "
                       "next run sees a single version and clears the conflict",
                       m_stats.roots_conflict, keys);
  }

  // The end of the run: the registry row (reconnecting once when the data session is gone), metrics, summary.
  void finish(const std::string& status, int code, const std::string& why) {
    m_control_socket.reset();  // the run is ending: nothing is left to control
    m_progress->finish(m_stats, status);
    m_info = report::RunInfo{m_job.name, m_command, why, m_run_id, code, seconds(), m_control->held_seconds("throttle")};
    m_heartbeat->stop();
    record_end(status, code, why);
    analyze();
    report();
  }

  void record_end(const std::string& status, int code, const std::string& why) {
    for (int attempt = 1; attempt <= 2; ++attempt) {
      try {
        if (attempt == 2) m_dst = app::connect(m_cfg.destination, "destination data", m_tag);
        m_registry.finish_run(*m_dst, m_jobrow.id, m_run_id, status, code, why, report::summary_json(m_info, m_stats));
        m_registry.prune(*m_dst, m_jobrow.id, m_job.processing.log_retention_days);
        return;
      } catch (const std::exception& e) {
        spdlog::warn("could not record the end of run {} in the registry{}: {}", m_run_id,
                     attempt == 1 ? " (reconnecting once)" : "", e.what());
      }
    }
  }

  // `analyze = true`: fresh index statistics on the source tables after a run that deleted rows.
  void analyze() {
    unsigned long long deleted = 0;
    for (const auto& t : m_stats.tables) deleted += t.deleted;
    if (!m_job.processing.analyze || deleted == 0 || restores()) return;
    for (const auto& t : m_tables) {
      try {
        m_src->query("ANALYZE TABLE " + t.source_name);
        spdlog::info("analyzed {}", t.source_name);
      } catch (const std::exception& e) {
        spdlog::warn("ANALYZE TABLE {} failed: {}", t.source_name, e.what());
      }
    }
  }

  void report() {
    if (!m_options.metrics_file.empty()) {
      write_metrics(m_options.metrics_file, m_info, m_stats);
      m_metrics_written = true;
    }
    if (m_options.json) {
      std::cout << report::summary_json(m_info, m_stats) << "\n";
    } else {
      std::cout << report::summary_text(m_info, m_stats);
      if (m_options.statistics) std::cout << report::statistics_text(m_info, m_stats);
    }
    std::cout << std::flush;
    m_summary_printed = true;
  }

  const config::Config& m_cfg;
  const RunOptions& m_options;
  config::Job m_job;  // the run's own copy: `goarchive ctl set` changes batch_size and sleep
  plan::Tree m_tree;
  pipeline::Mode m_mode;
  std::string m_command;
  tracking::Registry m_registry;
  Clock::time_point m_started = Clock::now();
  std::unique_ptr<db::Connection> m_src, m_dst, m_marks, m_src_reads, m_src_checks;
  std::shared_ptr<pipeline::DefinitionGuard> m_definitions;  // the source's definitions at the start
  std::shared_ptr<pipeline::DefinitionGuard> m_dst_definitions;  // the destination's (none in purge)
  std::vector<pipeline::TableMeta> m_tables;
  std::unique_ptr<locks::LockSession> m_dest_lock, m_src_lock;
  std::vector<locks::NamedLock> m_table_locks;
  guard::SourceIdentity m_identity;
  std::vector<std::string> m_table_keys;
  tracking::JobRow m_jobrow;
  unsigned long long m_run_id = 0;
  std::string m_tag;
  std::unique_ptr<Heartbeat> m_heartbeat;
  std::unique_ptr<report::Progress> m_progress;
  std::unique_ptr<RunControl> m_control;
  pipeline::Stats m_stats;
  report::RunInfo m_info;
  bool m_metrics_written = false;
  bool m_summary_printed = false;
  Steering m_steering;  // before the socket that serves it
  std::unique_ptr<ControlSocket> m_control_socket;
};

}  // namespace

int run_job(const config::Config& cfg, const RunOptions& options) {
  Run run(cfg, options);
  int code = k_exit_ok;
  try {
    code = run.execute();
  } catch (const Error& e) {
    // Refused or failed before the run started: the metrics still say so.
    if (!options.metrics_file.empty() && !run.metrics_written()) {
      report::RunInfo info{options.job, to_string(options.mode), e.what(), 0, e.exit_code(), run.seconds(), 0};
      write_metrics(options.metrics_file, info, pipeline::Stats{});
    }
    HookOutcome outcome = run.outcome(e.exit_code(), e.what());
    // --format json: a script reads one object on stdout whatever happened, the refusal's exit code and message too.
    if (options.json && !run.summary_printed()) std::cout << outcome.summary_json << "\n" << std::flush;
    run_hooks(cfg, outcome);
    throw;
  }
  run_hooks(cfg, run.outcome(code, ""));
  return code;
}

}  // namespace goarchive::app

// archive, copy-only and purge: the run as a list of phases (STYLE.md):
// connect -> preflight -> acquire_locks -> guard -> start_run -> batch_loop -> finish -> report.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/preflight.h"
#include "app/session.h"
#include "plan/sql.h"
#include "replication/gate.h"
#include "report/summary.h"
#include "tracking/registry.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<int> g_signal{0};

void on_signal(int sig) { g_signal.store(sig); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Seconds between heartbeats; GOARCHIVE_HEARTBEAT_SECONDS shortens it for tests.
double heartbeat_interval() {
  if (const char* v = std::getenv("GOARCHIVE_HEARTBEAT_SECONDS")) {
    double d = std::atof(v);
    if (d > 0) return d;
  }
  return 30;
}

// Checks both lock sets every interval and records the run's heartbeat in the registry (on its own connection).
class Heartbeat {
public:
  Heartbeat(locks::LockSession& src, locks::LockSession& dst, std::unique_ptr<db::Connection> registry_conn,
            const tracking::Registry& registry, unsigned long long job_id, unsigned long long run_id)
      : m_src(src), m_dst(dst), m_conn(std::move(registry_conn)), m_registry(registry), m_job_id(job_id),
        m_run_id(run_id) {
    m_conn->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    m_thread = std::thread([this] { loop(); });
  }
  ~Heartbeat() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> g(m_mutex);
      m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
  }
  bool lost() const { return m_lost.load(); }
  // Replaces the registry session after a lost connection (the engine retries its batch).
  void reconnect(std::unique_ptr<db::Connection> conn) {
    std::lock_guard<std::mutex> g(m_session_mutex);
    conn->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    m_conn = std::move(conn);
  }


private:
  void loop() {
    double interval = heartbeat_interval();
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop) {
      m_cv.wait_for(lock, std::chrono::duration<double>(interval), [this] { return m_stop; });
      if (m_stop) break;
      if (!m_src.holds_all() || !m_dst.holds_all()) {
        spdlog::error("heartbeat: a lock set is lost; the run stops before its next commit");
        m_lost = true;
      }
      try {
        std::lock_guard<std::mutex> g(m_session_mutex);
        m_registry.heartbeat(*m_conn, m_job_id, m_run_id);
      } catch (const std::exception& e) {
        spdlog::warn("heartbeat: could not record the heartbeat: {}", e.what());
      }
    }
  }

  locks::LockSession& m_src;
  locks::LockSession& m_dst;
  std::unique_ptr<db::Connection> m_conn;
  std::mutex m_session_mutex;
  const tracking::Registry& m_registry;
  unsigned long long m_job_id, m_run_id;
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::atomic<bool> m_lost{false};
};

class LockLost : public Error {
public:
  explicit LockLost(const std::string& where)
      : Error(fmt::format("the run lost its named locks on the {} (its lock session was killed or disconnected); "
                          "it stopped and the transaction in flight was rolled back. Nothing is committed without "
                          "the locks; rerun the job to finish its work",
                          where)) {}
};

// Creates the tracking schema under the schema lock if it is not ready (seed 001, lock 1).
void ensure_registry(const config::Config& cfg, locks::LockSession& dest_lock, db::Connection& dst,
                     const tracking::Registry& registry) {
  if (registry.ready(dst)) return;
  std::vector<locks::NamedLock> sl = {schema_lock(cfg)};
  dest_lock.name_locks(sl);
  unsigned long long holder = 0;
  double wait = 60;
  if (const char* v = std::getenv("GOARCHIVE_SCHEMA_LOCK_WAIT")) wait = std::atof(v);  // tests only
  if (dest_lock.acquire(sl, wait, holder) >= 0) {
    throw BusyError(fmt::format("the tracking schema {} is being created by another GoArchive run that still holds "
                                "its schema lock after {:.0f} seconds (destination connection {}); this run did "
                                "nothing. Try again later",
                                cfg.destination.job_schema, wait, holder));
  }
  try {
    if (!registry.ready(dst)) {
      fault::point("creating_schema");
      registry.create(dst);
    }
  } catch (...) {
    dest_lock.release(sl[0].name);
    throw;
  }
  dest_lock.release(sl[0].name);
}

void acquire_job_lock(locks::LockSession& dest_lock, std::vector<locks::NamedLock>& jl, const config::Job& job) {
  dest_lock.name_locks(jl);
  unsigned long long holder = 0;
  if (dest_lock.acquire(jl, 0, holder) >= 0) {
    throw BusyError(fmt::format("job \"{}\" is already running: its advisory lock is held by another session "
                                "(destination connection {})",
                                job.name, holder));
  }
}

void acquire_table_locks(locks::LockSession& src_lock, std::vector<locks::NamedLock>& tl) {
  src_lock.name_locks(tl);
  // A fixed order (by name) so that two runs can never wait on each other.
  std::sort(tl.begin(), tl.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  unsigned long long holder = 0;
  int failed = src_lock.acquire(tl, 0, holder);
  if (failed >= 0) {
    const auto& l = tl[static_cast<size_t>(failed)];
    throw BusyError(fmt::format("the source table {}.{} is in use by another GoArchive run (source connection\n{}). "
                                "Jobs whose tables overlap run one at a time; this run did nothing.",
                                l.a, l.b, holder));
  }
}

// The unfinished-work guard (seed 001): refuse when another job on the same source data shares a table and is
// running or holds unfinished roots. Exit 4 while every such job is live, 1 otherwise.
void check_guard(const tracking::Registry& registry, db::Connection& dst, unsigned long long job_id,
                 const std::vector<std::string>& table_keys, const guard::SourceIdentity& self) {
  auto hits = registry.guard_candidates(dst, job_id, table_keys);
  std::vector<tracking::GuardHit> blocking;
  for (auto& h : hits) {
    if (guard::same_source_data(self, h.source)) blocking.push_back(std::move(h));
  }
  if (blocking.empty()) return;
  bool all_live = std::all_of(blocking.begin(), blocking.end(), [](const auto& h) { return h.live; });
  std::string msg = "this run shares tables with other jobs that are running or hold unfinished work on the same "
                    "source data; this run did nothing:";
  for (const auto& h : blocking) {
    std::string state = h.status == "running" ? (h.live ? "running, live" : "marked running, no heartbeat within 60 s")
                                              : h.status;
    msg += fmt::format("\n  job \"{}\" ({}; unfinished roots: {} copied, {} deleting) shares {}", h.name, state,
                       h.copied, h.deleting, join(h.shared_tables, ", "));
    if (h.live) {
      msg += "\n    way out: wait for it to finish, then try again";
    } else if (h.copied + h.deleting > 0) {
      msg += fmt::format("\n    way out: rerun job \"{}\" so its recovery finishes its work", h.name);
    } else {
      msg += fmt::format("\n    way out: its process is gone with nothing in its log: clear it with "
                         "`goarchive jobs clear -j {}`",
                         h.name);
    }
  }
  if (all_live) throw BusyError(msg);
  throw Error(msg);
}

// READ COMMITTED on both data sessions: deletes by exact key take record locks only (no gap locks), and on the
// destination two jobs starting at the same moment never deadlock on the registry's gap locks; every state
// write is guarded explicitly (seed 000).
void prepare_data_sessions(const config::Config& cfg, db::Connection& src, db::Connection& dst) {
  src.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  dst.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  dst.execute(std::string("SET SESSION foreign_key_checks = ") + (cfg.destination.foreign_key_checks ? "1" : "0"));
}

// The optimizer's estimate of the roots to archive (EXPLAIN: no scan), for the progress display's ETA.
unsigned long long estimate_roots(db::Connection& src, const config::Config& cfg, const config::Job& job) {
  try {
    db::RowSet r = src.query(fmt::format("EXPLAIN SELECT 1 FROM {} WHERE ({})",
                                         sql::qualified(cfg.source.database, job.root_table), job.where));
    for (size_t c = 0; c < r.cols(); ++c) {
      if (r.names()[c] == "rows" && r.rows() > 0 && !r.is_null(0, c)) return std::stoull(r.cell(0, c));
    }
  } catch (const std::exception& e) {
    spdlog::debug("no row estimate: {}", e.what());
  }
  return 0;
}

}  // namespace

pipeline::Mode to_pipeline(int mode) {
  switch (static_cast<Mode>(mode)) {
    case Mode::archive: return pipeline::Mode::archive;
    case Mode::copy_only: return pipeline::Mode::copy_only;
    case Mode::purge: return pipeline::Mode::purge;
  }
  return pipeline::Mode::archive;
}

namespace {

// Prometheus textfile: written to PATH.tmp and renamed into place. A failed run keeps the earlier run's
// last-success timestamp, so that an alert on its age still fires.
void write_metrics(const std::string& path, const report::RunInfo& info, const pipeline::Stats& stats) {
  double now = static_cast<double>(std::time(nullptr));
  std::string text = report::metrics_text(info, stats, now, info.exit_code == 0);
  if (info.exit_code != 0) {
    std::ifstream old(path);
    std::string line;
    while (std::getline(old, line)) {
      if (line.rfind("goarchive_last_success_timestamp_seconds", 0) == 0 ||
          line.rfind("# HELP goarchive_last_success", 0) == 0 || line.rfind("# TYPE goarchive_last_success", 0) == 0) {
        text += line + "\n";
      }
    }
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) {
      spdlog::warn("could not write the metrics file {}", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) spdlog::warn("could not rename {} to {}", tmp, path);
}

int run_job_impl(const config::Config& cfg, const RunOptions& options, bool& metrics_written);

}  // namespace

int run_job(const config::Config& cfg, const RunOptions& options) {
  bool metrics_written = false;
  auto started = Clock::now();
  try {
    return run_job_impl(cfg, options, metrics_written);
  } catch (const Error& e) {
    // Refused or failed before the run started: the metrics still say so.
    if (!options.metrics_file.empty() && !metrics_written) {
      report::RunInfo info;
      info.job = options.job;
      info.mode = to_string(options.mode);
      info.exit_code = e.exit_code();
      info.reason = e.what();
      info.seconds = std::chrono::duration<double>(Clock::now() - started).count();
      pipeline::Stats none;
      write_metrics(options.metrics_file, info, none);
    }
    throw;
  }
}

namespace {

int run_job_impl(const config::Config& cfg, const RunOptions& options, bool& metrics_written) {
  const config::Job& job = cfg.job(options.job);
  plan::Tree tree(job);
  pipeline::Mode mode = to_pipeline(static_cast<int>(options.mode));
  const std::string command = to_string(options.mode);
  install_signal_handlers();
  auto started = Clock::now();
  std::string prelim_tag = sql::tag(job.name, 0);

  // connect
  auto src = connect(cfg.source, "source data", prelim_tag);
  auto dst = connect(cfg.destination, "destination data", prelim_tag);
  prepare_data_sessions(cfg, *src, *dst);

  // preflight
  PreflightReport pf = preflight(cfg, job, tree, mode, *src, dst.get());
  require(pf, job.name);
  auto tables = pipeline::describe(tree, pf.source_tables, job, cfg.source.database, cfg.destination.database);

  // acquire_locks: schema lock (new registry only), job lock, table locks
  tracking::Registry registry(cfg.destination.job_schema);
  locks::LockSession dest_lock(cfg.destination, "destination lock");
  ensure_registry(cfg, dest_lock, *dst, registry);
  auto jl = job_locks(cfg, job);
  acquire_job_lock(dest_lock, jl, job);
  locks::LockSession src_lock(cfg.source, "source lock");
  auto tl = table_locks(cfg, tree);
  acquire_table_locks(src_lock, tl);
  fault::point("after_locks");

  // guard, with both lock sets held
  guard::SourceIdentity identity = source_identity(*src, cfg.source);
  std::vector<std::string> table_keys;
  std::vector<std::pair<std::string, std::string>> table_names;
  for (const auto& l : tl) {
    table_keys.push_back(l.name.substr(std::string(locks::prefix(locks::LockKind::table)).size()));
    table_names.emplace_back(l.a, l.b);
  }
  tracking::JobRow jr;
  for (int attempt = 1;; ++attempt) {
    try {
      jr = registry.ensure_job(*dst, job.name, command, identity, cfg.destination.database, job.root_table,
                               table_names, table_keys);
      break;
    } catch (const db::DbError& e) {
      if (!e.retryable() || e.connection_lost() || attempt == 5) throw;
      spdlog::debug("recording job {} in the registry: {} (retry {})", job.name, e.what(), attempt);
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
    }
  }
  registry.restrict_to_scope(root_scope(cfg, job));
  tracking::check_recorded_source(registry, *dst, jr, identity, root_scope(cfg, job));
  check_guard(registry, *dst, jr.id, table_keys, identity);

  // start_run
  unsigned long long run_id =
      registry.start_run(*dst, jr, command, src_lock.connection_id(), dest_lock.connection_id());
  std::string tag = sql::tag(job.name, static_cast<long long>(run_id));
  src->set_tag(tag);
  dst->set_tag(tag);
  src_lock.connection().set_tag(tag);
  dest_lock.connection().set_tag(tag);
  spdlog::info("{} job={} run={} started: {} table(s), batch_size {}, verification {}", command, job.name, run_id,
               tree.nodes().size(), job.processing.batch_size, config::to_string(job.processing.verification));
  Heartbeat heartbeat(src_lock, dest_lock, connect(cfg.destination, "destination registry", tag), registry, jr.id,
                      run_id);

  // batch_loop
  replication::Gate gate(cfg.replication);
  report::Progress progress(options.progress, ::isatty(STDERR_FILENO) != 0, job.processing.progress_interval,
                            estimate_roots(*src, cfg, job));
  std::string reason = "finished";
  int exit_code = k_exit_ok;
  pipeline::Stats stats;
  double held_total = 0;  // seconds held by the replication gate (kept apart from the engine's own stats)
  auto stop_requested = [&]() -> bool {
    if (int sig = g_signal.load()) {
      reason = sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM";
      exit_code = sig == SIGINT ? k_exit_sigint : k_exit_sigterm;
      return true;
    }
    if (options.max_runtime > 0 &&
        std::chrono::duration<double>(Clock::now() - started).count() >= options.max_runtime) {
      reason = fmt::format("max-runtime {} reached", format_duration(options.max_runtime));
      return true;
    }
    return false;
  };
  pipeline::Hooks hooks;
  hooks.before_commit = [&]() {
    if (heartbeat.lost()) throw LockLost("source or destination");
    if (!src_lock.holds_all()) throw LockLost("source");
    if (!dest_lock.holds_all()) throw LockLost("destination");
  };
  // A run whose lock set is lost stops, even while it sleeps, pauses or is held.
  auto require_locks = [&]() {
    if (heartbeat.lost()) throw LockLost("source or destination");
  };
  bool first_boundary = true;
  hooks.boundary = [&](const char*) {
    require_locks();
    if (job.processing.sleep > 0 && !first_boundary) {
      auto until = Clock::now() + std::chrono::duration<double>(job.processing.sleep);
      while (Clock::now() < until && !stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    bool announced = false;
    while (!job.processing.sentinel_file.empty() && std::filesystem::exists(job.processing.sentinel_file)) {
      if (!announced) {
        spdlog::warn("paused: sentinel file {} exists; remove it to continue", job.processing.sentinel_file);
        announced = true;
      }
      progress.update(stats, "paused: sentinel file");
      require_locks();
      if (stop_requested()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (announced) spdlog::info("sentinel file gone: continuing");
    first_boundary = false;
    return !stop_requested();
  };
  hooks.gate = [&](const char* phase) {
    if (!gate.enabled() || mode == pipeline::Mode::copy_only) return;
    auto held_since = Clock::now();
    std::optional<std::string> why;
    while ((why = gate.check())) {
      double held = std::chrono::duration<double>(Clock::now() - held_since).count();
      spdlog::warn("held before {}: {}", phase, *why);
      progress.update(stats, "held: " + *why);
      if (gate.max_hold() > 0 && held >= gate.max_hold()) {
        throw BusyError(fmt::format("stopped after holding {} for replication ({}); the run stopped cleanly at a "
                                    "batch boundary and resumes on its rerun",
                                    format_duration(held), *why));
      }
      auto until = Clock::now() + std::chrono::duration<double>(gate.check_interval());
      while (Clock::now() < until) {
        require_locks();
        if (g_signal.load()) return;  // the next boundary stops the run
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    held_total += std::chrono::duration<double>(Clock::now() - held_since).count();
  };
  hooks.progress = [&](const pipeline::Stats& s, const char* phase) {
    stats = s;
    stats.t_held = held_total;
    progress.update(stats, phase);
  };

  report::RunInfo info;
  info.job = job.name;
  info.mode = command;
  info.run_id = run_id;
  auto finish = [&](const std::string& status, int code, const std::string& why, const pipeline::Stats& s) {
    progress.finish();
    info.reason = why;
    info.exit_code = code;
    info.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    heartbeat.stop();
    try {
      registry.finish_run(*dst, jr.id, run_id, status, code, why, report::summary_json(info, s));
      registry.prune(*dst, jr.id, job.processing.log_retention_days);
    } catch (const std::exception& e) {
      spdlog::warn("could not record the end of run {} in the registry: {}", run_id, e.what());
    }
    if (!options.metrics_file.empty()) {
      write_metrics(options.metrics_file, info, s);
      metrics_written = true;
    }
    std::cout << report::summary_text(info, s) << std::flush;
  };

  int retries = 0;
  while (true) {
    pipeline::Engine engine(mode, job, tables, *src, *dst, registry, jr.id, run_id, root_scope(cfg, job), hooks);
    if (retries > 0) engine.carry_over(stats);  // a retry continues the run's counts
    try {
      bool completed = engine.run();
      stats = engine.stats();
      stats.t_held = held_total;
      stats.retries = static_cast<unsigned long long>(retries);
      if (completed) {
        reason = stats.roots == 0 ? "nothing to do" : "finished";
        if (stats.roots_changed > 0) {
          reason = fmt::format("finished; {} root(s) changed in the source after their copy and were left there",
                               stats.roots_changed);
          exit_code = k_exit_failed;
        }
      }
      // A completed run is finished (even with changed roots left in the source); one stopped early is stopped.
      std::string status = completed ? "finished" : "stopped";
      spdlog::info("run {} ended: {}", run_id, reason);
      finish(status, exit_code, reason, stats);
      return exit_code;
    } catch (const db::DbError& e) {
      stats = engine.stats();
      stats.t_held = held_total;
      bool locks_ok = !heartbeat.lost() && src_lock.holds_all() && dest_lock.holds_all();
      if (e.retryable() && locks_ok && retries < 10 && !g_signal.load()) {
        ++retries;
        double backoff = std::min(30.0, 0.5 * (1 << std::min(retries, 6)));
        spdlog::warn("retryable error ({}), retry {} of 10 in {:.1f}s: {}", e.code(), retries, backoff, e.what());
        std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
        try {
          if (e.connection_lost()) {
            src = connect(cfg.source, "source data", tag);
            dst = connect(cfg.destination, "destination data", tag);
            prepare_data_sessions(cfg, *src, *dst);
            heartbeat.reconnect(connect(cfg.destination, "destination registry", tag));
          }
        } catch (const std::exception& again) {
          finish("failed", k_exit_failed, again.what(), stats);
          throw;
        }
        continue;
      }
      if (!locks_ok) {
        LockLost lost(!src_lock.holds_all() ? "source" : "destination");
        finish("failed", k_exit_failed, lost.what(), stats);
        throw lost;
      }
      finish("failed", k_exit_failed, e.what(), stats);
      throw;
    } catch (const Error& e) {
      stats = engine.stats();
      stats.t_held = held_total;
      finish(e.exit_code() == k_exit_busy ? "stopped" : "failed", e.exit_code(), e.what(), stats);
      throw;
    }
  }
}

}  // namespace

}  // namespace goarchive::app

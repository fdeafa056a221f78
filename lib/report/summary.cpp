#include "report/summary.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/json.h"
#include "util/strings.h"

namespace goarchive::report {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The reason on the summary's first line: one line, whatever the message it comes from (a server error may
// carry line breaks).
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string("(no reason recorded)") : out;
}
}  // namespace

std::atomic<bool>& progress_line_drawn() {
  static std::atomic<bool> drawn{false};
  return drawn;
}

std::string summary_text(const RunInfo& info, const pipeline::Stats& s) {
  std::string out = fmt::format("goarchive {} job={} run={}: {} in {} (exit {})\n", info.mode, info.job, info.run_id,
                                one_line(info.reason), format_duration(info.seconds), info.exit_code);
  out += fmt::format("  {:<28} {:>12} {:>12} {:>12}\n", "table", "copied", "verified", "deleted");
  unsigned long long total = 0;
  for (const auto& t : s.tables) {
    out += fmt::format("  {:<28} {:>12} {:>12} {:>12}\n", t.table, t.copied, t.verified, t.deleted);
    total += std::max(t.copied, t.deleted);
  }
  double rate = info.seconds > 0 ? static_cast<double>(total) / info.seconds : 0;
  out += fmt::format("  batches {}, roots {} (done {}, changed and left in source {}, no longer matching where {}, "
                     "in conflict {}, recovered {}), retries {}\n",
                     s.batches, s.roots, s.roots_done, s.roots_changed, s.roots_withdrawn, s.roots_conflict,
                     s.recovered, s.retries);
  if (s.partitions_detached + s.partitions_done + s.partitions_left > 0) {
    out += fmt::format("  partitions: detached {}, taken whole {}, left whole for the next run {}; rows that went back "
                       "into the table {}; DDL {:.2f} s\n",
                       s.partitions_detached, s.partitions_done, s.partitions_left, s.partition_rows_back, s.t_ddl);
    if (s.partition_rows_estimate > 0) {
      out += fmt::format("  purged whole: about {} row(s), the server's estimate (a purge drops a partition without "
                         "counting its rows)\n",
                         s.partition_rows_estimate);
    }
  }
  if (s.roots_blocked > 0) {
    out += fmt::format("  blocked and left in source {} (a parent staying in the source, a table outside the job "
                       "still holding their tree, or a row the archive holds already; each with its reason):\n",
                       s.roots_blocked);
    size_t shown = 0;
    for (const auto& why : s.blocked) {
      if (why.empty()) continue;
      if (shown == 20) break;
      ++shown;
      out += "    " + why + "\n";
    }
    if (s.roots_blocked > shown) {
      out += fmt::format("    ... and {} more (the JSON summary lists up to {})\n", s.roots_blocked - shown,
                         pipeline::Stats::k_blocked_kept);
    }
  }
  out += fmt::format("  time: select {}, copy {}, verify {}, delete {}, held {}, throttled {}; {:.0f} rows/s\n",
                     format_duration(s.t_select), format_duration(s.t_copy), format_duration(s.t_verify),
                     format_duration(s.t_delete), format_duration(s.t_held), format_duration(info.t_throttled), rate);
  return out;
}

std::string statistics_text(const RunInfo& info, const pipeline::Stats& s) {
  struct Row {
    const char* phase;
    double seconds;
  };
  const Row rows[] = {{"select", s.t_select},
                      {"copy", s.t_copy},
                      {"verify", s.t_verify},
                      {"delete", s.t_delete},
                      {"held (replication)", s.t_held},
                      {"throttled (source load)", info.t_throttled},
                      {"waiting for source", s.t_wait_source}};
  std::string out = fmt::format("statistics of run {} ({} batches, wall time {:.3f}s):\n", info.run_id, s.batches,
                                info.seconds);
  out += fmt::format("  {:<24} {:>12} {:>8} {:>12}\n", "phase", "seconds", "% wall", "per batch");
  for (const auto& r : rows) {
    double pct = info.seconds > 0 ? 100.0 * r.seconds / info.seconds : 0;
    double per_batch = s.batches > 0 ? r.seconds / static_cast<double>(s.batches) : 0;
    out += fmt::format("  {:<24} {:>12.3f} {:>7.1f}% {:>12.3f}\n", r.phase, r.seconds, pct, per_batch);
  }
  out += fmt::format("  {:<24} {:>12.3f} {:>7.1f}% {:>12}\n", "wall", info.seconds, info.seconds > 0 ? 100.0 : 0.0,
                     "");
  if (s.locked_batches > 0) {
    out += fmt::format("  rows held locked by a delete: mean {:.1f} ms, max {:.1f} ms ({} transactions)\n",
                       1000 * s.t_locked / static_cast<double>(s.locked_batches), 1000 * s.t_locked_max,
                       s.locked_batches);
  }
  return out;
}

std::string summary_json(const RunInfo& info, const pipeline::Stats& s) {
  using goarchive::Json;
  Json j = Json::object();
  j.set("schema_version", Json(1));
  j.set("job", Json(info.job));
  j.set("mode", Json(info.mode));
  j.set("run_id", Json(info.run_id));
  j.set("reason", Json(info.reason));
  j.set("exit_code", Json(info.exit_code));
  j.set("seconds", Json(info.seconds));
  Json tables = Json::array();
  for (const auto& t : s.tables) {
    Json o = Json::object();
    o.set("table", Json(t.table));
    o.set("copied", Json(t.copied));
    o.set("verified", Json(t.verified));
    o.set("deleted", Json(t.deleted));
    o.set("already_in_destination", Json(t.skipped_existing));
    tables.push(o);
  }
  j.set("tables", tables);
  j.set("batches", Json(s.batches));
  j.set("roots", Json(s.roots));
  j.set("roots_done", Json(s.roots_done));
  j.set("roots_changed", Json(s.roots_changed));
  j.set("roots_withdrawn", Json(s.roots_withdrawn));
  j.set("roots_conflict", Json(s.roots_conflict));
  j.set("roots_blocked", Json(s.roots_blocked));
  Json blocked = Json::array();
  for (const auto& why : s.blocked) {
    if (!why.empty()) blocked.push(Json(why));
  }
  j.set("blocked", blocked);
  Json parts = Json::object();
  parts.set("detached", Json(s.partitions_detached));
  parts.set("taken_whole", Json(s.partitions_done));
  parts.set("left_whole", Json(s.partitions_left));
  parts.set("rows_back", Json(s.partition_rows_back));
  parts.set("purged_rows_estimate", Json(s.partition_rows_estimate));
  parts.set("ddl_seconds", Json(s.t_ddl));
  j.set("partitions", parts);
  j.set("recovered", Json(s.recovered));
  j.set("retries", Json(s.retries));
  Json t = Json::object();
  t.set("select", Json(s.t_select));
  t.set("copy", Json(s.t_copy));
  t.set("verify", Json(s.t_verify));
  t.set("delete", Json(s.t_delete));
  t.set("held", Json(s.t_held));
  t.set("throttled", Json(info.t_throttled));
  t.set("waiting_for_source", Json(s.t_wait_source));
  j.set("phase_seconds", t);
  Json locks = Json::object();
  locks.set("transactions", Json(s.locked_batches));
  locks.set("mean_ms", Json(s.locked_batches ? 1000 * s.t_locked / static_cast<double>(s.locked_batches) : 0.0));
  locks.set("max_ms", Json(1000 * s.t_locked_max));
  j.set("row_locks", locks);
  return j.dump();
}

std::string metrics_text(const RunInfo& info, const pipeline::Stats& s, double finished_unix_time, bool success) {
  std::string job = json_quote(info.job);
  std::string out;
  auto header = [&](const char* name, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
  };
  auto per_table = [&](const char* name, const char* help, auto value) {
    header(name, help);
    for (const auto& t : s.tables) {
      out += fmt::format("{}{{job={},table={}}} {}\n", name, job, json_quote(t.table), value(t));
    }
  };
  auto one = [&](const char* name, const char* help, const std::string& value) {
    header(name, help);
    out += fmt::format("{}{{job={}}} {}\n", name, job, value);
  };
  per_table("goarchive_last_run_rows_copied", "Rows copied to the destination by the last run.",
            [](const pipeline::TableStats& t) { return t.copied; });
  per_table("goarchive_last_run_rows_deleted", "Rows deleted from the source by the last run.",
            [](const pipeline::TableStats& t) { return t.deleted; });
  one("goarchive_last_run_batches", "Batches of the last run.", std::to_string(s.batches));
  one("goarchive_last_run_roots", "Root rows the last run selected.", std::to_string(s.roots));
  one("goarchive_last_run_roots_changed",
      "Root rows the last run left in the source because they changed after their copy.",
      std::to_string(s.roots_changed));
  one("goarchive_last_run_roots_withdrawn",
      "Root rows the last run left in the source because they no longer matched where under the delete's lock.",
      std::to_string(s.roots_withdrawn));
  one("goarchive_last_run_roots_conflict",
      "Root rows in conflict after the last run: both versions kept until a person removes one.",
      std::to_string(s.roots_conflict));
  one("goarchive_last_run_roots_blocked",
      "Root rows the last run left in the source because a parent staying there or a table outside the job still "
      "holds their tree, or the archive holds a row of it already.",
      std::to_string(s.roots_blocked));
  one("goarchive_last_run_retries", "Statements the last run retried.", std::to_string(s.retries));
  one("goarchive_last_run_held_seconds", "Seconds the last run held for replication lag.",
      fmt::format("{:.3f}", s.t_held));
  one("goarchive_last_run_throttled_seconds", "Seconds the last run held for source load ([throttle]).",
      fmt::format("{:.3f}", info.t_throttled));
  one("goarchive_run_duration_seconds", "Duration of the last run.", fmt::format("{:.3f}", info.seconds));
  one("goarchive_run_exit_code", "Exit code of the last run.", std::to_string(info.exit_code));
  one("goarchive_run_end_timestamp_seconds", "When the last run ended.", fmt::format("{:.0f}", finished_unix_time));
  if (success) {
    one("goarchive_last_success_timestamp_seconds", "When a run last succeeded.",
        fmt::format("{:.0f}", finished_unix_time));
  }
  return out;
}

std::string progress_line(const pipeline::Stats& s, const std::string& state,
                          std::optional<unsigned long long> total, double elapsed) {
  unsigned long long rows = 0;
  for (const auto& t : s.tables) rows += std::max(t.copied + t.skipped_existing, t.deleted);
  double rate = elapsed > 0 ? static_cast<double>(rows) / elapsed : 0;
  std::string of = "/?";  // unknown: no percentage and no ETA rather than a wrong one
  std::string eta = "?";
  if (total) {
    unsigned long long t = std::max(*total, s.roots);
    double pct = t > 0 ? 100.0 * static_cast<double>(s.roots) / static_cast<double>(t) : 100.0;
    // Never rounded up to 100% before the last root: "100%" is what a finished run shows.
    if (s.roots < t) pct = std::min(pct, 99.0);
    of = fmt::format("/~{} ({:.0f}%)", t, pct);
    if (s.roots >= t) {
      eta = format_duration(0);
    } else if (s.roots > 0) {
      eta = format_duration(elapsed * static_cast<double>(t - s.roots) / static_cast<double>(s.roots));
    }
  }
  return fmt::format("{} | roots {}{} | rows {} | {:.0f} rows/s | batch {} | ETA {}", state, s.roots, of, rows, rate,
                     s.batches, eta);
}

Progress::Progress(bool enabled, bool terminal, double interval, std::optional<unsigned long long> estimated_roots)
    : m_enabled(enabled), m_terminal(terminal), m_interval(interval), m_estimate(estimated_roots),
      m_started(now_seconds()) {}

void Progress::update(const pipeline::Stats& s, const std::string& state) {
  if (!m_enabled) return;
  show(progress_line(s, state, m_estimate, now_seconds() - m_started), false);
}

void Progress::show(const std::string& line, bool force) {
  double now = now_seconds();
  if (m_terminal) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    m_drawn = true;
    progress_line_drawn() = true;
  } else if (force || m_last < 0 || now - m_last >= m_interval) {
    spdlog::info("progress: {}", line);
    m_last = now;
  }
}

void Progress::finish(const pipeline::Stats& s, const std::string& status) {
  bool completed = status == "finished";
  if (m_enabled && (m_drawn || !m_terminal)) {
    // A completed run matched exactly the roots it archived: they are the total, whatever the estimate said.
    std::optional<unsigned long long> total = completed ? std::optional<unsigned long long>(s.roots) : m_estimate;
    show(progress_line(s, status, total, now_seconds() - m_started), true);
  }
  if (m_drawn && progress_line_drawn().exchange(false)) {
    std::fprintf(stderr, "\n");  // the last frame stays on the terminal; what follows starts on its own line
    std::fflush(stderr);
  }
}

}  // namespace goarchive::report

#pragma once
// The commands of DESIGN.md §2, one function each; the CLI parses flags and calls these.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace goarchive::app {

enum class Mode { archive, copy_only, purge, restore };
const char* to_string(Mode mode);

enum class Format { text, json };

struct RunOptions {
  Mode mode = Mode::archive;
  std::string job;
  bool dry_run = false;
  double max_runtime = 0;  // seconds; 0 = no limit
  bool progress = true;
  std::string metrics_file;
  bool statistics = false;  // --statistics: print report::statistics_text after the summary
  bool json = false;        // --format json: the summary on stdout is one JSON object (report::summary_json)
  std::string where;        // restore --where: which archived roots go back (SQL on the archived root table)
  bool keep_archive = false;  // restore --keep-archive: the archived rows stay in the archive too
};

// archive / copy-only / purge / restore. Returns the exit code; throws goarchive::Error for refusals and failures.
int run_job(const config::Config& cfg, const RunOptions& options);
// --all: run_job for every job whose `mode` is options.mode, in name order; a busy job (exit 4) is skipped and
// named. Returns the worst exit code (2 over 1 over 4 over 0); a signal stops the list (130 / 143).
int run_all(const config::Config& cfg, RunOptions options);
// dry-run: connects, runs preflight, prints the plan, SQL and counts; writes nothing anywhere.
int dry_run(const config::Config& cfg, const RunOptions& options, Format format);
// plan: the tree, copy and delete order and the effective settings, from the config alone.
int plan(const config::Config& cfg, const std::string& job, Format format);
// validate: the config, then every preflight check of every job (or one) against the servers.
int validate(const config::Config& cfg, const std::optional<std::string>& job, int verbosity, Format format);
int jobs_list(const config::Config& cfg, Format format);
int jobs_clear(const config::Config& cfg, const std::string& job);
int locks(const config::Config& cfg, const std::string& job);
// schema: prints the destination tables of a job (CREATE DATABASE/TABLE) or, with `apply`, creates the missing ones.
int schema(const config::Config& cfg, const std::string& job, bool apply);
int discover(const config::Config& cfg, const std::string& root_table);
// ctl: sends `words` (status, pause, resume, stop, set KEY=VALUE) to the control socket at `socket_path` and prints
// the run's JSON reply. 0 done, 2 a request refused (ConfigError / Error), 1 no run answers (Error). `job` only
// names the run in messages.
int ctl(const std::string& socket_path, const std::string& job, const std::vector<std::string>& words);
std::string version_text();

}  // namespace goarchive::app

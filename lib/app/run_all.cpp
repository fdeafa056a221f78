// `archive|copy-only|purge --all`: every job of that mode in the config, one after another, with one exit code.
#include <map>

#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/error.h"

namespace goarchive::app {

namespace {

// The order in which exit codes win: a usage error over a failure over busy over success.
int rank(int code) {
  switch (code) {
    case k_exit_ok: return 0;
    case k_exit_busy: return 1;
    case k_exit_failed: return 2;
    case k_exit_usage: return 3;
    default: return 2;
  }
}

}  // namespace

int run_all(const config::Config& cfg, RunOptions options) {
  const std::string mode = to_string(options.mode);
  int worst = k_exit_ok;
  std::map<std::string, int> codes;
  for (const auto& [name, job] : cfg.jobs) {
    if (job.mode != mode) continue;
    options.job = name;
    int code = k_exit_ok;
    try {
      code = run_job(cfg, options);
    } catch (const Error& e) {
      code = e.exit_code();
      if (code == k_exit_sigint || code == k_exit_sigterm) throw;  // a signal stops the whole list
      if (code == k_exit_busy) {
        spdlog::warn("job {} is busy and was skipped: {}", name, e.what());
      } else {
        spdlog::error("job {}: {}", name, e.what());
      }
    }
    codes[name] = code;
    if (rank(code) > rank(worst)) worst = code;
    // A signal, or `goarchive ctl stop`, that ended a job between two batches: the jobs after it do not start.
    if (code == k_exit_sigint || code == k_exit_sigterm) {
      spdlog::warn("{} --all: job {} was stopped ({}); the jobs after it were not run", mode, name, code);
      return code;
    }
  }
  if (codes.empty()) {
    throw ConfigError("--all: no job has mode = \"" + mode + "\" in " + cfg.path +
                      " (a job's mode key, default archive)");
  }
  std::string line;
  for (const auto& [name, code] : codes) line += (line.empty() ? "" : ", ") + name + " " + std::to_string(code);
  spdlog::info("{} --all: {} job(s) run, exit codes {}; exit {}", mode, codes.size(), line, worst);
  return worst;
}

}  // namespace goarchive::app

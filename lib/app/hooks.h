#pragma once
// The end-of-run hooks ([hooks] on_success, on_failure, on_conflict, on_busy, on_end; --on-* flags): which ones a
// run's outcome calls, their environment (the outcome as GOARCHIVE_* variables, never a secret), and running each
// once under /bin/sh with a timeout. A hook never changes the run's exit code: its failure or timeout is logged.
// Never touches a server.
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace goarchive::app {

struct HookOutcome {
  std::string job, command, reason, summary_json;
  int exit_code = 0;
  unsigned long long run_id = 0, conflicts = 0, blocked = 0;
  std::vector<std::pair<std::string, unsigned long long>> copied, deleted;  // per table
};

// Pure: the hooks an outcome calls, in order: on_success (exit 0), on_conflict (exit 1 with roots in conflict),
// on_failure (any other exit 1, or 2), on_busy (exit 4); then on_end whatever the exit code.
std::vector<std::string> hooks_for(int exit_code, unsigned long long conflicts);

// Pure: the names of the variables that hold a password for `cfg` (password_env of every server), which no hook
// may see; every variable whose name holds PASSWORD or PASSWD, and MYSQL_PWD, are left out as well.
std::set<std::string> secret_variables(const config::Config& cfg);

// Pure: a hook's environment, "NAME=value" each: `base` without the secret variables and without the outcome's
// own variables, then the outcome: GOARCHIVE_HOOK, _JOB, _COMMAND, _EXIT_CODE, _REASON, _RUN_ID,
// _CONFLICTS, _BLOCKED, _ROWS_COPIED and _ROWS_DELETED ("table=n,table=n"), _SUMMARY_JSON (a file's path).
std::vector<std::string> hook_environment(const std::map<std::string, std::string>& base,
                                          const std::set<std::string>& secrets, const HookOutcome& outcome,
                                          const std::string& hook, const std::string& summary_path);

// Runs the hooks `outcome` calls, each at most cfg.hooks.timeout seconds; logs a failure or a timeout; never throws.
void run_hooks(const config::Config& cfg, const HookOutcome& outcome);

}  // namespace goarchive::app

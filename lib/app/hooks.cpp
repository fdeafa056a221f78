#include "app/hooks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"
#include "util/strings.h"

extern char** environ;

namespace goarchive::app {

namespace {

// The variables of a hook's outcome (goarchive(1), ENVIRONMENT): any the parent process had are replaced.
constexpr const char* k_outcome[] = {"GOARCHIVE_HOOK",      "GOARCHIVE_JOB",          "GOARCHIVE_COMMAND",
                                     "GOARCHIVE_EXIT_CODE", "GOARCHIVE_REASON",       "GOARCHIVE_RUN_ID",
                                     "GOARCHIVE_CONFLICTS", "GOARCHIVE_BLOCKED",      "GOARCHIVE_ROWS_COPIED",
                                     "GOARCHIVE_ROWS_DELETED", "GOARCHIVE_SUMMARY_JSON"};

std::string per_table(const std::vector<std::pair<std::string, unsigned long long>>& rows) {
  std::string out;
  for (const auto& [table, n] : rows) out += (out.empty() ? "" : ",") + table + "=" + std::to_string(n);
  return out;
}

bool secret_name(const std::string& name, const std::set<std::string>& secrets) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return secrets.count(name) || upper.find("PASSWORD") != std::string::npos ||
         upper.find("PASSWD") != std::string::npos || upper == "MYSQL_PWD";
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) out.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return out;
}

// The JSON summary in a file of its own (mode 0600, created exclusively), for the hooks to read; "" on failure.
std::string write_summary(const std::string& json) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/goarchive-summary-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) return "";
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return buf.data();
}

// Runs `command` under /bin/sh with `env`, its output on stderr; returns a description of what went wrong, or "".
std::string run_one(const std::string& command, const std::vector<std::string>& env, double timeout) {
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return fmt::format("cannot start it: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);     // its own process group: a timeout stops whatever it started too
    ::dup2(2, 1);        // stdout stays the run's summary
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::execle("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return fmt::format("cannot wait for it: {}", std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGTERM);
      for (int i = 0; i < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return fmt::format("timed out after {} s and was stopped (hooks.timeout)", timeout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "ended abnormally";
}

}  // namespace

std::vector<std::string> hooks_for(int exit_code, unsigned long long conflicts) {
  std::vector<std::string> out;
  if (exit_code == k_exit_ok) out.push_back("on_success");
  else if (exit_code == k_exit_failed && conflicts > 0) out.push_back("on_conflict");
  else if (exit_code == k_exit_failed || exit_code == k_exit_usage) out.push_back("on_failure");
  else if (exit_code == k_exit_busy) out.push_back("on_busy");
  out.push_back("on_end");
  return out;
}

std::set<std::string> secret_variables(const config::Config& cfg) {
  std::set<std::string> out;
  auto add = [&](const config::ServerConfig& s) {
    const std::string prefix = "password_env ";
    if (s.password_origin.rfind(prefix, 0) == 0) out.insert(s.password_origin.substr(prefix.size()));
  };
  add(cfg.source);
  add(cfg.destination);
  for (const auto& s : cfg.replication.servers) add(s);
  return out;
}

std::vector<std::string> hook_environment(const std::map<std::string, std::string>& base,
                                          const std::set<std::string>& secrets, const HookOutcome& o,
                                          const std::string& hook, const std::string& summary_path) {
  const std::string values[] = {hook,
                                o.job,
                                o.command,
                                std::to_string(o.exit_code),
                                o.reason,
                                std::to_string(o.run_id),
                                std::to_string(o.conflicts),
                                std::to_string(o.blocked),
                                per_table(o.copied),
                                per_table(o.deleted),
                                summary_path};
  static_assert(std::size(k_outcome) == std::size(values));
  const std::set<std::string> outcome(std::begin(k_outcome), std::end(k_outcome));
  std::vector<std::string> env;
  for (const auto& [name, value] : base) {
    if (secret_name(name, secrets) || outcome.count(name)) continue;
    env.push_back(name + "=" + value);
  }
  for (size_t i = 0; i < std::size(k_outcome); ++i) env.push_back(std::string(k_outcome[i]) + "=" + values[i]);
  return env;
}

void run_hooks(const config::Config& cfg, const HookOutcome& outcome) {
  const std::map<std::string, const std::string*> commands = {{"on_success", &cfg.hooks.on_success},
                                                              {"on_failure", &cfg.hooks.on_failure},
                                                              {"on_conflict", &cfg.hooks.on_conflict},
                                                              {"on_busy", &cfg.hooks.on_busy},
                                                              {"on_end", &cfg.hooks.on_end}};
  std::vector<std::pair<std::string, std::string>> due;
  for (const auto& hook : hooks_for(outcome.exit_code, outcome.conflicts)) {
    if (!commands.at(hook)->empty()) due.emplace_back(hook, *commands.at(hook));
  }
  if (due.empty()) return;
  try {
    const std::string summary = write_summary(outcome.summary_json);
    const auto base = process_environment();
    const auto secrets = secret_variables(cfg);
    for (const auto& [hook, command] : due) {
      spdlog::info("running hook {}", hook);
      std::string problem = run_one(command, hook_environment(base, secrets, outcome, hook, summary), cfg.hooks.timeout);
      if (!problem.empty()) {
        spdlog::warn("hook {} {}; the run's exit code stays {}", hook, problem, outcome.exit_code);
      }
    }
    if (!summary.empty()) ::unlink(summary.c_str());
  } catch (const std::exception& e) {
    spdlog::warn("the hooks could not run: {}; the run's exit code stays {}", e.what(), outcome.exit_code);
  }
}

}  // namespace goarchive::app

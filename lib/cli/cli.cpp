// The only translation unit that includes CLI11 (it is slow to compile).
#include "cli/cli.h"

#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "util/json.h"
#include "app/logging.h"
#include "report/summary.h"
#include "config/config.h"
#include "db/dialect.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::cli {

namespace {

struct Globals {
  std::string config_path;
  int verbose = 0;
  bool quiet = false;
  std::string log_format;
  std::string log_file;
  bool no_progress = false;
};

config::Config load(const Globals& g, const config::Overrides& extra = {}) {
  if (g.config_path.empty()) {
    throw ConfigError("no config file given; pass -c/--config FILE (see goarchive.toml(5))");
  }
  config::Overrides o = extra;
  if (!g.log_format.empty()) o.log_format = g.log_format;
  if (!g.log_file.empty()) o.log_file = g.log_file;
  config::Config cfg = config::load_file(g.config_path, config::process_environment(), o);
  app::setup_logging(cfg.logging, g.verbose, g.quiet);
  return cfg;
}

// The one message of a refusal or failure, on stderr: plain text, or a JSON line when logs are JSON.
void report_error(const std::string& message, int exit_code) {
  if (report::progress_line_drawn().exchange(false)) std::cerr << "\r\033[K";
  if (app::log_is_json()) {
    std::cerr << R"({"schema_version":1,"level":"error","msg":)" << json_quote("goarchive: " + message)
              << R"(,"exit_code":)" << exit_code << "}\n";
  } else {
    std::cerr << "goarchive: " << message << "\n";
  }
}

app::Format format_of(const std::string& f) { return f == "json" ? app::Format::json : app::Format::text; }

void add_globals(CLI::App& app, Globals& g) {
  app.add_option("-c,--config", g.config_path, "TOML configuration file");
  app.add_flag("-v,--verbose", g.verbose, "More log output (-vv = debug, -vvv = every statement)");
  app.add_flag("-q,--quiet", g.quiet, "Only warnings and errors");
  app.add_option("--log-format", g.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-file", g.log_file, "Also write the log to this file");
  app.add_flag("--no-progress", g.no_progress, "No progress display or progress lines");
}

// A word where a command is expected that names none ("archiv", "jobs clr"): CLI11 would only say "A subcommand is
// required" or "arguments were not expected". Walks argv like the parser: options, their values, then commands.
struct UnknownCommand {
  std::string word, path;
  std::vector<std::string> choices;
};

std::optional<UnknownCommand> find_unknown_command(CLI::App& top, int argc, char** argv) {
  CLI::App* cur = &top;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.find('=') != std::string::npos) continue;
      bool long_form = arg.rfind("--", 0) == 0;
      if (!long_form && arg.size() > 2) continue;  // -vv, or -cFILE with its value attached
      const CLI::Option* opt = cur->get_option_no_throw(arg);
      if (opt && opt->get_items_expected_min() > 0) ++i;  // skip its value
      continue;
    }
    std::vector<std::string> names;
    for (const CLI::App* sub : cur->get_subcommands({})) names.push_back(sub->get_name());
    if (names.empty()) return std::nullopt;  // a command without subcommands: the parser judges the rest
    if (std::find(names.begin(), names.end(), arg) != names.end()) {
      cur = cur->get_subcommand(arg);
      path += arg + " ";
      continue;
    }
    return UnknownCommand{arg, path, names};
  }
  return std::nullopt;
}

// Every value a command line can carry.
struct Flags {
  Globals g;
  std::string job, max_runtime, metrics_file, root_table;
  bool dry = false, statistics = false, schema_apply = false, all = false, keep_archive = false;
  bool force_triggers = false;
  std::string restore_where;
  std::string format = "text", dry_mode = "archive";
  std::optional<long long> batch_size, delete_batch_size;
  std::optional<double> sleep, lock_time, progress_interval;
  std::optional<long long> max_threads_running, critical_threads_running;
  std::optional<std::string> throttle_query;
  std::optional<std::string> partitions;     // --partitions auto|off
  std::map<std::string, std::string> hooks;  // --on-success CMD, ...
  std::string socket;                        // ctl --socket PATH
  std::vector<std::string> request;          // ctl's words: status, pause, resume, stop, set KEY=VALUE
};

// The commands, as CLI11 knows them after define_commands.
struct Commands {
  CLI::App *archive, *copy_only, *purge, *restore, *dry_run, *plan, *validate, *jobs, *jobs_clear, *locks, *discover, *schema,
      *version, *ctl;
};

void add_job(CLI::App* sub, Flags& f, bool required) {
  auto* opt = sub->add_option("-j,--job", f.job, "Job name ([jobs.<name>] in the config)");
  if (required) opt->required();
}

void add_format(CLI::App* sub, Flags& f) {
  sub->add_option("--format", f.format, "text or json")->check(CLI::IsMember({"text", "json"}));
}

void add_run_flags(CLI::App* sub, Flags& f) {
  auto* job = sub->add_option("-j,--job", f.job, "Job name ([jobs.<name>] in the config)");
  auto* all = sub->add_flag("--all", f.all, "Every job of this mode in the config (its `mode` key), one after another");
  job->excludes(all);
  sub->add_option("--max-runtime", f.max_runtime, "Stop cleanly at a batch boundary after this long (90s, 15m, 2h)");
  sub->add_flag("--dry-run", f.dry, "Same as the dry-run command for this mode: writes nothing");
  sub->add_option("--metrics-file", f.metrics_file, "Write Prometheus metrics here at the end of the run");
  sub->add_option("--batch-size", f.batch_size, "Roots per batch")->check(CLI::Range(1LL, 100000LL));
  sub->add_option("--delete-batch-size", f.delete_batch_size, "Rows per DELETE")->check(CLI::Range(1LL, 100000LL));
  sub->add_option("--sleep", f.sleep, "Seconds between batches")->check(CLI::Range(0.0, 3600.0));
  sub->add_option("--lock-time", f.lock_time,
                  "Seconds a batch's delete may hold the application's rows: batches shrink to fit (0 = off)")
      ->check(CLI::Range(0.0, 60.0));
  sub->add_option("--progress-interval", f.progress_interval,
                  "Seconds between progress lines when stderr is not a terminal")
      ->check(CLI::Range(1.0, 86400.0));
  sub->add_flag("--statistics", f.statistics, "Print a per-phase timing table after the summary");
  add_format(sub, f);
  for (const char* hook : {"success", "failure", "conflict", "busy", "end"}) {
    std::string key = std::string("on_") + hook;
    sub->add_option_function<std::string>(
        std::string("--on-") + hook, [&f, key](const std::string& cmd) { f.hooks[key] = cmd; },
        std::string("Shell command run at the end of the run: ") + hook + " ([hooks] " + key + ")");
  }
}

void add_throttle_flags(CLI::App* sub, Flags& f) {
  sub->add_option("--max-threads-running", f.max_threads_running,
                  "Hold at a batch boundary while the source's Threads_running >= N (0 = off)")
      ->check(CLI::Range(0LL, 1000000LL));
  sub->add_option("--critical-threads-running", f.critical_threads_running,
                  "Stop cleanly (exit 4) once the source's Threads_running >= N (0 = off)")
      ->check(CLI::Range(0LL, 1000000LL));
  sub->add_option("--throttle-query", f.throttle_query, "Hold while this SELECT's first column is non-zero");
}

// A subcommand with the global flags, and -j/--job when `job` says so (0 none, 1 optional, 2 required).
CLI::App* command(CLI::App& app, Flags& f, const char* name, const char* what, int job) {
  CLI::App* sub = app.add_subcommand(name, what);
  add_globals(*sub, f.g);
  if (job) add_job(sub, f, job == 2);
  return sub;
}

Commands define_commands(CLI::App& app, Flags& f) {
  Commands c{};
  c.archive = command(app, f, "archive", "Copy the job's rows, verify, delete them from the source", 0);
  c.copy_only = command(app, f, "copy-only", "Copy and verify; never delete from the source", 0);
  c.purge = command(app, f, "purge", "Delete from the source child-first; copy nothing", 0);
  for (auto* s : {c.archive, c.copy_only, c.purge}) add_run_flags(s, f);
  for (auto* s : {c.archive, c.purge}) add_throttle_flags(s, f);  // DESIGN.md §4: [throttle] holds archive and purge
  c.restore = command(app, f, "restore", "Move archived roots and their trees back into the source", 0);
  add_run_flags(c.restore, f);
  add_throttle_flags(c.restore, f);
  c.restore->add_option("--where", f.restore_where, "Which archived roots go back: SQL on the archived root table "
                                                    "(1=1 for every one)")
      ->required();
  c.restore->add_flag("--keep-archive", f.keep_archive, "Copy back and leave the archive as it is");
  c.dry_run = command(app, f, "dry-run", "Preflight, plan, SQL and row counts; writes nothing", 2);
  c.dry_run->add_option("--mode", f.dry_mode, "archive, copy-only, purge or restore")
      ->check(CLI::IsMember({"archive", "copy-only", "purge", "restore"}));
  c.dry_run->add_option("--where", f.restore_where, "restore: which archived roots would go back");
  c.dry_run->add_flag("--keep-archive", f.keep_archive, "restore: the archive would be left as it is");
  add_format(c.dry_run, f);
  c.plan = command(app, f, "plan", "Print the relation tree, copy and delete order, settings (no server)", 1);
  add_format(c.plan, f);
  c.validate = command(app, f, "validate", "Check the config and every preflight check; writes nothing", 1);
  add_format(c.validate, f);
  c.jobs = command(app, f, "jobs", "List the tracking registry", 0);
  add_format(c.jobs, f);
  c.jobs_clear = command(*c.jobs, f, "clear", "Clear a job marked running whose process is gone", 2);
  c.locks = command(app, f, "locks", "Print every lock name of a job and its holder", 2);
  c.discover = command(app, f, "discover", "Print a relations block for the tree under a root table", 0);
  c.discover->add_option("--root", f.root_table, "Root table")->required();
  c.schema = command(app, f, "schema", "Print (or create with --apply) the destination tables of a job", 2);
  c.schema->add_flag("--apply", f.schema_apply, "Create the missing destination database and tables; never alters one");
  c.ctl = command(app, f, "ctl", "Talk to a running job through its control socket ([control] socket)", 1);
  c.ctl->add_option("--socket", f.socket, "The control socket's path (default: [control] socket of the config for -j)");
  c.ctl->add_option("request", f.request, "status | pause | resume | stop | set batch_size=N | set sleep=S")
      ->required();
  c.version = app.add_subcommand("version", "Version, git commit, library versions");
  for (auto* s : {c.archive, c.copy_only, c.purge, c.dry_run, c.validate, c.plan}) {
    s->add_option("--partitions", f.partitions,
                  "auto: whole partitions inside where leave as one (archive, purge); off: every row by the row path")
        ->check(CLI::IsMember({"auto", "off"}));
  }
  for (auto* s : {c.archive, c.purge, c.dry_run, c.validate}) {
    s->add_flag("--force-triggers", f.force_triggers,
                "Let the source tables' DELETE triggers fire on each delete, stating what each does (force_triggers)");
  }
  return c;
}

config::Overrides overrides_of(const Flags& f) {
  config::Overrides o;
  o.batch_size = f.batch_size;
  o.delete_batch_size = f.delete_batch_size;
  o.sleep = f.sleep;
  o.lock_time = f.lock_time;
  o.progress_interval = f.progress_interval;
  o.max_threads_running = f.max_threads_running;
  o.critical_threads_running = f.critical_threads_running;
  o.throttle_query = f.throttle_query;
  o.hooks = f.hooks;
  o.force_triggers = f.force_triggers;
  o.partitions = f.partitions;
  return o;
}

int plan_command(Flags& f) {
  config::Overrides o;
  o.partitions = f.partitions;
  config::Config cfg = load(f.g, o);
  if (f.job.empty()) {
    if (cfg.jobs.size() != 1) {
      throw ConfigError("plan needs -j/--job NAME: the config defines " + std::to_string(cfg.jobs.size()) + " jobs");
    }
    f.job = cfg.jobs.begin()->first;
  }
  return app::plan(cfg, f.job, format_of(f.format));
}

// archive, copy-only, purge and dry-run.
int run_command(const Commands& c, const Flags& f) {
  app::RunOptions options;
  options.job = f.job;
  options.progress = !f.g.no_progress;
  options.metrics_file = f.metrics_file;
  options.statistics = f.statistics;
  options.json = f.format == "json";
  if (!f.max_runtime.empty()) options.max_runtime = parse_duration(f.max_runtime, "--max-runtime");
  if (c.dry_run->parsed()) {
    options.mode = f.dry_mode == "purge"       ? app::Mode::purge
                   : f.dry_mode == "copy-only" ? app::Mode::copy_only
                   : f.dry_mode == "restore"   ? app::Mode::restore
                                               : app::Mode::archive;
    if (options.mode == app::Mode::restore) {
      if (f.restore_where.find_first_not_of(" \t\n") == std::string::npos) {
        throw ConfigError("dry-run --mode restore needs --where with a condition on the archived root table; --where "
                          "'1=1' takes every archived root of the job");
      }
      options.where = f.restore_where;
      options.keep_archive = f.keep_archive;
    } else if (!f.restore_where.empty() || f.keep_archive) {
      throw ConfigError("--where and --keep-archive belong to restore: use dry-run --mode restore");
    }
    return app::dry_run(load(f.g, overrides_of(f)), options, format_of(f.format));
  }
  options.mode = c.archive->parsed()     ? app::Mode::archive
                 : c.copy_only->parsed() ? app::Mode::copy_only
                 : c.restore->parsed()   ? app::Mode::restore
                                         : app::Mode::purge;
  if (options.mode == app::Mode::restore) {
    if (f.all) throw ConfigError("restore takes one job: use -j NAME (--all is for archive, copy-only and purge)");
    if (f.restore_where.find_first_not_of(" \t\n") == std::string::npos) {
      throw ConfigError("restore needs --where with a condition on the archived root table; --where '1=1' restores "
                        "every archived root of the job");
    }
    options.where = f.restore_where;
    options.keep_archive = f.keep_archive;
  }
  if (f.job.empty() && !f.all) {
    throw ConfigError(std::string(app::to_string(options.mode)) + " needs -j/--job NAME, or --all for every job whose "
                      "mode is " + app::to_string(options.mode));
  }
  config::Config cfg = load(f.g, overrides_of(f));
  if (f.all) {
    if (f.dry) throw ConfigError("--dry-run takes one job: use -j NAME");
    return app::run_all(cfg, options);
  }
  if (f.dry) return app::dry_run(cfg, options, format_of(f.format));
  return app::run_job(cfg, options);
}

// ctl: the socket of --socket, else the config's [control] socket for the job.
int ctl_command(Flags& f) {
  if (!f.socket.empty()) return app::ctl(f.socket, f.job, f.request);
  config::Config cfg = load(f.g);
  if (f.job.empty()) {
    if (cfg.jobs.size() != 1) {
      throw ConfigError("ctl needs -j/--job NAME (or --socket PATH): the config defines " +
                        std::to_string(cfg.jobs.size()) + " jobs");
    }
    f.job = cfg.jobs.begin()->first;
  }
  cfg.job(f.job);  // a job the file defines
  if (cfg.control.socket.empty()) {
    throw ConfigError(cfg.path + " sets no control socket: add [control] socket = \"/run/goarchive/%j.sock\" "
                      "(goarchive.toml(5)) before the run starts, or pass --socket PATH");
  }
  return app::ctl(config::control_socket_path(cfg.control.socket, f.job), f.job, f.request);
}

int dispatch(const Commands& c, Flags& f) {
  if (c.version->parsed()) {
    std::cout << app::version_text();
    return k_exit_ok;
  }
  if (c.plan->parsed()) return plan_command(f);
  if (c.validate->parsed()) {
    config::Overrides o;
    o.force_triggers = f.force_triggers;
    o.partitions = f.partitions;
    return app::validate(load(f.g, o), f.job.empty() ? std::nullopt : std::optional<std::string>(f.job), f.g.verbose,
                         format_of(f.format));
  }
  if (c.jobs_clear->parsed()) return app::jobs_clear(load(f.g), f.job);
  if (c.jobs->parsed()) return app::jobs_list(load(f.g), format_of(f.format));
  if (c.locks->parsed()) return app::locks(load(f.g), f.job);
  if (c.discover->parsed()) return app::discover(load(f.g), f.root_table);
  if (c.schema->parsed()) return app::schema(load(f.g), f.job, f.schema_apply);
  if (c.ctl->parsed()) return ctl_command(f);
  return run_command(c, f);
}

// Parses argv; returns an exit code when the run is over (help, a usage error), nullopt to go on.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  if (auto unknown = find_unknown_command(app, argc, argv)) {
    auto close = close_matches(unknown->word, unknown->choices, 1);
    std::cerr << "goarchive: unknown command \"" << unknown->path << unknown->word << "\"";
    if (!close.empty()) std::cerr << "; did you mean \"" << unknown->path << close[0] << "\"?";
    std::cerr << "\nRun 'goarchive " << unknown->path << "--help' for the commands.\n";
    return k_exit_usage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "goarchive: " << e.what() << "\n" << "Run 'goarchive --help' for the commands and flags.\n";
    return k_exit_usage;
  }
  return std::nullopt;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"goarchive: archive cold rows of a root table and every dependent child row from a MySQL/MariaDB "
               "source to an archive server"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  Flags f;
  add_globals(app, f.g);
  Commands commands = define_commands(app, f);
  if (auto done = parse(app, argc, argv)) return *done;
  try {
    fault::check_environment();
    db::check_portable_environment();
    return dispatch(commands, f);
  } catch (const Error& e) {
    spdlog::debug("exit {}: {}", e.exit_code(), e.what());
    report_error(e.what(), e.exit_code());
    return e.exit_code();
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what(), k_exit_failed);
    return k_exit_failed;
  }
}

}  // namespace goarchive::cli

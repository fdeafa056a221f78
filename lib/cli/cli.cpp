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
#include "util/error.h"
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

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"goarchive: archive cold rows of a root table and every dependent child row from a MySQL/MariaDB "
               "source to an archive server"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  Globals g;
  add_globals(app, g);

  std::string job;
  std::string max_runtime;
  bool dry = false;
  std::string metrics_file;
  std::string format = "text";
  std::optional<long long> batch_size, delete_batch_size;
  std::optional<double> sleep;
  std::optional<double> progress_interval;
  std::optional<long long> max_threads_running, critical_threads_running;
  std::optional<std::string> throttle_query;
  bool statistics = false;
  std::string root_table;

  auto add_job = [&](CLI::App* sub, bool required) {
    auto* opt = sub->add_option("-j,--job", job, "Job name ([jobs.<name>] in the config)");
    if (required) opt->required();
  };
  auto add_run_flags = [&](CLI::App* sub) {
    add_job(sub, true);
    sub->add_option("--max-runtime", max_runtime, "Stop cleanly at a batch boundary after this long (90s, 15m, 2h)");
    sub->add_flag("--dry-run", dry, "Same as the dry-run command for this mode: writes nothing");
    sub->add_option("--metrics-file", metrics_file, "Write Prometheus metrics here at the end of the run");
    sub->add_option("--batch-size", batch_size, "Roots per batch")->check(CLI::Range(1LL, 100000LL));
    sub->add_option("--delete-batch-size", delete_batch_size, "Rows per DELETE")->check(CLI::Range(1LL, 100000LL));
    sub->add_option("--sleep", sleep, "Seconds between batches")->check(CLI::Range(0.0, 3600.0));
    sub->add_option("--progress-interval", progress_interval,
                    "Seconds between progress lines when stderr is not a terminal")
        ->check(CLI::Range(1.0, 86400.0));
    sub->add_flag("--statistics", statistics, "Print a per-phase timing table after the summary");
  };
  auto add_throttle_flags = [&](CLI::App* sub) {
    sub->add_option("--max-threads-running", max_threads_running,
                    "Hold at a batch boundary while the source's Threads_running >= N (0 = off)")
        ->check(CLI::Range(0LL, 1000000LL));
    sub->add_option("--critical-threads-running", critical_threads_running,
                    "Stop cleanly (exit 4) once the source's Threads_running >= N (0 = off)")
        ->check(CLI::Range(0LL, 1000000LL));
    sub->add_option("--throttle-query", throttle_query, "Hold while this SELECT's first column is non-zero");
  };
  auto add_format = [&](CLI::App* sub) {
    sub->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  };

  CLI::App* archive = app.add_subcommand("archive", "Copy the job's rows, verify, delete them from the source");
  CLI::App* copy_only = app.add_subcommand("copy-only", "Copy and verify; never delete from the source");
  CLI::App* purge = app.add_subcommand("purge", "Delete from the source child-first; copy nothing");
  for (auto* s : {archive, copy_only, purge}) {
    add_globals(*s, g);
    add_run_flags(s);
  }
  for (auto* s : {archive, purge}) add_throttle_flags(s);  // DESIGN.md §4: [throttle] holds archive and purge
  CLI::App* dry_run = app.add_subcommand("dry-run", "Preflight, plan, SQL and row counts; writes nothing");
  add_globals(*dry_run, g);
  add_job(dry_run, true);
  std::string dry_mode = "archive";
  dry_run->add_option("--mode", dry_mode, "archive, copy-only or purge")
      ->check(CLI::IsMember({"archive", "copy-only", "purge"}));
  add_format(dry_run);
  CLI::App* plan = app.add_subcommand("plan", "Print the relation tree, copy and delete order, settings (no server)");
  add_globals(*plan, g);
  add_job(plan, false);
  add_format(plan);
  CLI::App* validate = app.add_subcommand("validate", "Check the config and every preflight check; writes nothing");
  add_globals(*validate, g);
  add_job(validate, false);
  add_format(validate);
  CLI::App* jobs = app.add_subcommand("jobs", "List the tracking registry");
  add_globals(*jobs, g);
  add_format(jobs);
  CLI::App* jobs_clear = jobs->add_subcommand("clear", "Clear a job marked running whose process is gone");
  add_globals(*jobs_clear, g);
  add_job(jobs_clear, true);
  CLI::App* locks = app.add_subcommand("locks", "Print every lock name of a job and its holder");
  add_globals(*locks, g);
  add_job(locks, true);
  CLI::App* discover = app.add_subcommand("discover", "Print a relations block for the tree under a root table");
  add_globals(*discover, g);
  discover->add_option("--root", root_table, "Root table")->required();
  CLI::App* schema = app.add_subcommand("schema", "Print (or create with --apply) the destination tables of a job");
  add_globals(*schema, g);
  add_job(schema, true);
  bool schema_apply = false;
  schema->add_flag("--apply", schema_apply, "Create the missing destination database and tables; never alters one");
  CLI::App* version = app.add_subcommand("version", "Version, git commit, library versions");

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

  try {
    if (version->parsed()) {
      std::cout << app::version_text();
      return k_exit_ok;
    }
    config::Overrides overrides;
    overrides.batch_size = batch_size;
    overrides.delete_batch_size = delete_batch_size;
    overrides.sleep = sleep;
    overrides.progress_interval = progress_interval;
    overrides.max_threads_running = max_threads_running;
    overrides.critical_threads_running = critical_threads_running;
    overrides.throttle_query = throttle_query;
    if (plan->parsed()) {
      config::Config cfg = load(g);
      if (job.empty()) {
        if (cfg.jobs.size() != 1) {
          throw ConfigError("plan needs -j/--job NAME: the config defines " + std::to_string(cfg.jobs.size()) + " jobs");
        }
        job = cfg.jobs.begin()->first;
      }
      return app::plan(cfg, job, format_of(format));
    }
    if (validate->parsed()) {
      config::Config cfg = load(g);
      return app::validate(cfg, job.empty() ? std::nullopt : std::optional<std::string>(job), g.verbose,
                           format_of(format));
    }
    if (jobs_clear->parsed()) return app::jobs_clear(load(g), job);
    if (jobs->parsed()) return app::jobs_list(load(g), format_of(format));
    if (locks->parsed()) return app::locks(load(g), job);
    if (discover->parsed()) return app::discover(load(g), root_table);
    if (schema->parsed()) return app::schema(load(g), job, schema_apply);

    app::RunOptions options;
    options.job = job;
    options.progress = !g.no_progress;
    options.metrics_file = metrics_file;
    options.statistics = statistics;
    if (!max_runtime.empty()) options.max_runtime = parse_duration(max_runtime, "--max-runtime");
    if (dry_run->parsed()) {
      options.mode = dry_mode == "purge" ? app::Mode::purge
                     : dry_mode == "copy-only" ? app::Mode::copy_only : app::Mode::archive;
      return app::dry_run(load(g, overrides), options, format_of(format));
    }
    options.mode = archive->parsed() ? app::Mode::archive : copy_only->parsed() ? app::Mode::copy_only : app::Mode::purge;
    config::Config cfg = load(g, overrides);
    if (dry) return app::dry_run(cfg, options, app::Format::text);
    return app::run_job(cfg, options);
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

#pragma once
// The effective configuration: TOML file + job block + environment + flags, each value with its origin.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace goarchive::config {

// A password that never prints: formatting it shows "<redacted>".
class Secret {
public:
  Secret() = default;
  explicit Secret(std::string value) : m_value(std::move(value)) {}
  const std::string& reveal() const { return m_value; }
  bool empty() const { return m_value.empty(); }

private:
  std::string m_value;
};

enum class TlsMode { disabled, preferred, required, verify_ca, verify_identity };
const char* to_string(TlsMode mode);

struct ServerConfig {
  std::string role;  // "source", "destination" or "replication.servers[N]"
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string socket;
  std::string user;
  Secret password;
  std::string password_origin;  // "password", "password_env VAR", "password_file PATH" or ""
  std::string password_error;   // set when password_env names an unset variable; raised only on connect
  std::string database;
  std::string defaults_file;
  TlsMode tls = TlsMode::preferred;
  std::string tls_ca, tls_cert, tls_key;
  // The server's RSA public key (PEM file) that caching_sha2_password and sha256_password (MySQL 8's default
  // accounts) encrypt the password with on a connection without TLS; "" = Connector/C asks the server for it.
  std::string server_public_key;
  double connect_timeout = 10;
  double read_timeout = 600;
  double write_timeout = 600;
  std::string display() const;  // "user@host:port" (never the password)
};

struct SourceConfig : ServerConfig {
  // archive and purge refuse a source that is a replica (it replicates, or is read-only): the rows they delete
  // there are still on its primary. true lets a replica that is meant to be written through (never a read-only one).
  bool allow_replica = false;
};

struct DestinationConfig : ServerConfig {
  std::string job_schema = "goarchive";
  bool foreign_key_checks = true;
};

enum class VerifyMethod { sha256, count, none };
const char* to_string(VerifyMethod method);

struct Processing {
  long long batch_size = 1000;
  long long delete_batch_size = 500;
  double sleep = 0.0;
  double lock_time = 0.0;  // seconds a batch's delete may hold the application's rows; batches shrink to fit; 0 = off
  std::string sentinel_file;
  double progress_interval = 30;
  double log_retention_days = 7;
  VerifyMethod verification = VerifyMethod::sha256;
  bool analyze = false;  // ANALYZE TABLE the source tables after a run that deleted rows
};

struct ReplicationConfig {
  bool enabled = false;
  double max_lag_seconds = 10;
  double check_interval = 5;
  double max_hold = 0;  // 0 = hold forever
  std::vector<ServerConfig> servers;
};

// [throttle]: hold archive and purge at a batch boundary while the source is busy (global, like [replication]).
struct ThrottleConfig {
  long long max_threads_running = 0;       // 0 = off; hold while Threads_running >= this
  long long critical_threads_running = 0;  // 0 = off; stop cleanly (exit 4) once Threads_running >= this
  std::string query;                       // "" = off; hold while its first column is non-zero
  double check_interval = 1;               // seconds between checks while holding
  double max_hold = 0;                     // seconds one hold may last; then stop cleanly (exit 4); 0 = forever
  bool enabled() const { return max_threads_running > 0 || critical_threads_running > 0 || !query.empty(); }
};

struct LoggingConfig {
  std::string level = "info";
  std::string format = "text";
  std::string file;
};

// [hooks]: shell commands run once at the end of a run, by outcome (app/hooks.h).
struct HooksConfig {
  std::string on_success, on_failure, on_conflict, on_busy, on_end;
  double timeout = 30;  // seconds a hook may take before it is stopped
};

// [control]: the control socket of a running job (app/control_socket.h); "" = none.
struct ControlConfig {
  std::string socket;  // a path pattern: %j is the job name, %% a '%'
};

// The control socket path of `job` under `pattern` (%j -> the job name, %% -> '%'); "" when `pattern` is "".
// The loader has refused every pattern this cannot expand.
std::string control_socket_path(const std::string& pattern, const std::string& job);

struct Relation {
  std::string table;
  std::string parent;                    // empty = root table
  std::vector<std::string> foreign_key;  // columns in `table`
  std::vector<std::string> references;   // columns in `parent`; empty = parent's primary key
};

struct Job {
  std::string name;
  std::string mode = "archive";  // the command `--all` runs it with: archive, copy-only or purge
  std::string root_table;
  std::string where;
  std::vector<std::string> primary_key;  // empty = read from the server
  std::vector<Relation> relations;
  Processing processing;
  // archive and purge refuse a source table with a DELETE trigger; true lets it fire on each delete, and every run
  // states what it does (force_triggers = true, or --force-triggers).
  bool force_triggers = false;
  // A RANGE-partitioned root table with no relations: "auto" detaches every partition wholly inside `where` and
  // archives (or purges) it whole (pipeline/partition_path.h); "off" takes the row path for every row.
  std::string partitions = "auto";
  // Seconds each DDL of the partition path waits for the table's metadata lock before it gives up (the session's
  // lock_wait_timeout): the application's statements queue behind a waiting DDL for at most this long.
  long long ddl_lock_wait_timeout = 1;
};

// Where an effective value came from, for `validate -v`.
enum class Origin { default_value, file, job_block, environment, flag };
const char* to_string(Origin origin);

struct Setting {
  std::string value;  // already redacted for secrets
  Origin origin = Origin::default_value;
};

struct Config {
  std::string path;
  SourceConfig source;
  DestinationConfig destination;
  Processing processing;  // the [processing]/[verification] defaults
  ReplicationConfig replication;
  ThrottleConfig throttle;
  LoggingConfig logging;
  HooksConfig hooks;
  ControlConfig control;
  std::map<std::string, Job> jobs;
  // Every effective value by dotted key ("source.host", "jobs.x.batch_size"), with its origin.
  std::map<std::string, Setting> settings;

  const Job& job(const std::string& name) const;  // throws ConfigError naming the known jobs
};

// Command-line values that override the file (precedence step 5).
struct Overrides {
  std::optional<long long> batch_size;
  std::optional<long long> delete_batch_size;
  std::optional<double> sleep;
  std::optional<double> lock_time;
  std::optional<std::string> sentinel_file;
  std::optional<double> progress_interval;
  std::optional<long long> max_threads_running;
  std::optional<long long> critical_threads_running;
  std::optional<std::string> throttle_query;
  std::optional<std::string> log_level;
  std::optional<std::string> log_format;
  std::optional<std::string> log_file;
  std::map<std::string, std::string> hooks;  // "on_success" -> command, from --on-success ...
  bool force_triggers = false;                // --force-triggers: every job's force_triggers
  std::optional<std::string> partitions;      // --partitions auto|off: every job's partitions
};

// Loads and validates a config file. `env` is the process environment (injectable for tests).
// Throws ConfigError naming the key, its line and the fix.
Config load_file(const std::string& path, const std::map<std::string, std::string>& env,
                 const Overrides& overrides = {});
Config load_string(const std::string& text, const std::string& path,
                   const std::map<std::string, std::string>& env, const Overrides& overrides = {});

// The process environment as a map (GOARCHIVE_* and whatever password_env names).
std::map<std::string, std::string> process_environment();

}  // namespace goarchive::config

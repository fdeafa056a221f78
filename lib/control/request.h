#pragma once
// The requests `goarchive ctl` sends to a running job's control socket, one per line ("status", "pause",
// "resume", "stop", "set batch_size=N", "set sleep=S"): parsed and checked here, the same for the client (its
// words) and the socket (its line). Text only: no socket, no run.
#include <string>
#include <vector>

namespace goarchive::control {

enum class Verb { status, pause, resume, stop, set };
const char* to_string(Verb verb);

// What `set` may change at the next batch boundary, with the ranges of --batch-size and --sleep.
constexpr long long k_min_batch_size = 1, k_max_batch_size = 100000;
constexpr double k_max_sleep = 3600;

struct Request {
  Verb verb = Verb::status;
  std::string key;          // set: "batch_size" or "sleep"
  long long batch_size = 0;  // set batch_size
  double sleep = 0;          // set sleep (seconds)
};

// The request in `words` (e.g. {"set", "batch_size=500"}); throws ConfigError saying what is wrong and what is
// accepted.
Request parse_request(const std::vector<std::string>& words);
// The request in one protocol line: its words split on blanks.
Request parse_request_line(const std::string& line);
// `r` as one protocol line, without the newline ("set sleep=0.5").
std::string to_line(const Request& r);

}  // namespace goarchive::control

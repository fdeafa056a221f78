// The end-of-run texts: metrics names and types, the throttle time, the --statistics table.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>

#include "report/summary.h"

using goarchive::pipeline::Stats;
using goarchive::report::metrics_text;
using goarchive::report::RunInfo;
using goarchive::report::statistics_text;
using goarchive::report::summary_json;
using goarchive::report::summary_text;

namespace {

RunInfo info() {
  RunInfo i;
  i.job = "j";
  i.mode = "archive";
  i.reason = "finished";
  i.run_id = 7;
  i.seconds = 10;
  i.t_throttled = 2.5;
  return i;
}

Stats stats() {
  Stats s;
  s.tables.push_back({"orders", 100, 100, 100, 0});
  s.tables.push_back({"order_items", 300, 300, 300, 0});
  s.batches = 4;
  s.roots = 100;
  s.roots_done = 98;
  s.roots_changed = 2;
  s.t_select = 1;
  s.t_copy = 4;
  s.t_verify = 1.5;
  s.t_delete = 2;
  s.t_held = 0.5;
  return s;
}

}  // namespace

TEST_CASE("metrics: every family is a gauge with HELP and TYPE, none ends in _total, roots_changed exists") {
  std::string text = metrics_text(info(), stats(), 1700000000, true);
  std::istringstream in(text);
  std::string line, help, type;
  int families = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      help = line.substr(7, line.find(' ', 7) - 7);
      ++families;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      type = line.substr(7);
      CHECK(type == help + " gauge");
    } else {
      CAPTURE(line);
      CHECK(line.rfind(help, 0) == 0);  // a sample of the family just declared
      CHECK(std::regex_match(line, std::regex(R"(goarchive_[a-z_]+\{job="j"(,table="[a-z_]+")?\} -?[0-9.]+)")));
    }
    CHECK(line.find("_total") == std::string::npos);
  }
  CHECK(families >= 12);
  CHECK(text.find("goarchive_last_run_roots_changed{job=\"j\"} 2\n") != std::string::npos);
  CHECK(text.find("goarchive_last_run_rows_copied{job=\"j\",table=\"order_items\"} 300\n") != std::string::npos);
  CHECK(text.find("goarchive_last_run_throttled_seconds{job=\"j\"} 2.500\n") != std::string::npos);
  CHECK(text.find("goarchive_last_success_timestamp_seconds{job=\"j\"} 1700000000\n") != std::string::npos);
  CHECK(metrics_text(info(), stats(), 1700000000, false).find("last_success") == std::string::npos);
}

TEST_CASE("summary: the throttle time is in the text and the JSON") {
  CHECK(summary_text(info(), stats()).find("held 0.5s, throttled 2.5s;") != std::string::npos);
  CHECK(summary_json(info(), stats()).find("\"throttled\":2.5") != std::string::npos);
}

TEST_CASE("statistics: one row per phase with seconds, share of wall time and per batch") {
  std::string text = statistics_text(info(), stats());
  CHECK(text.rfind("statistics of run 7 (4 batches, wall time 10.000s):\n", 0) == 0);
  CHECK(text.find("  phase                         seconds   % wall    per batch\n") != std::string::npos);
  CHECK(text.find("  copy                            4.000    40.0%        1.000\n") != std::string::npos);
  CHECK(text.find("  throttled (source load)         2.500    25.0%        0.625\n") != std::string::npos);
  CHECK(text.find("  held (replication)              0.500     5.0%        0.125\n") != std::string::npos);
  for (const char* phase : {"select", "copy", "verify", "delete", "held (replication)", "throttled (source load)",
                            "waiting for source", "wall"}) {
    CAPTURE(phase);
    CHECK(text.find(std::string("\n  ") + phase + " ") != std::string::npos);
  }
  // Every row has the same width up to the last column.
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  size_t width = 0;
  while (std::getline(in, line)) {
    std::string trimmed = line.substr(0, line.find_last_not_of(' ') + 1);
    if (line.rfind("  wall", 0) == 0) continue;
    if (!width) width = trimmed.size();
    CHECK(trimmed.size() == width);
  }
  RunInfo empty = info();
  empty.seconds = 0;
  Stats none;
  CHECK(statistics_text(empty, none).find("nan") == std::string::npos);
}

TEST_CASE("progress: the total is the roots expected, '?' when unknown, never above 100%") {
  using goarchive::report::progress_line;
  Stats s = stats();
  s.roots = 300;
  CHECK(progress_line(s, "copying", 1000ULL, 10) ==
        "copying | roots 300/~1000 (30%) | rows 400 | 40 rows/s | batch 4 | ETA 23.3s");
  CHECK(progress_line(s, "copying", std::nullopt, 10) ==
        "copying | roots 300/? | rows 400 | 40 rows/s | batch 4 | ETA ?");
  // An estimate below the roots done is raised to them; 99.9% is not rounded up to 100% before the end.
  CHECK(progress_line(s, "copying", 100ULL, 10).find("roots 300/~300 (100%)") != std::string::npos);
  s.roots = 999;
  CHECK(progress_line(s, "copying", 1000ULL, 10).find("(99%)") != std::string::npos);
  s.roots = 0;
  CHECK(progress_line(s, "finished", 0ULL, 10).find("roots 0/~0 (100%)") != std::string::npos);
}

TEST_CASE("summary: the reason is one line") {
  RunInfo i = info();
  i.reason = "Lost connection\nto server\r\n";
  std::string text = summary_text(i, stats());
  CHECK(text.substr(0, text.find('\n')) == "goarchive archive job=j run=7: Lost connection to server in 10.0s (exit 0)");
}

TEST_CASE("summary: blocked roots are in the text, the JSON and the metrics") {
  Stats s = stats();
  CHECK(summary_text(info(), s).find("blocked") == std::string::npos);
  s.roots_blocked = 2;
  s.blocked = {"payment (payment_id) = (17) still belongs to rental (rental_id) = (9), which stays in the source"};
  std::string text = summary_text(info(), s);
  CHECK(text.find("blocked and left in source 2") != std::string::npos);
  CHECK(text.find("still belongs to rental (rental_id) = (9)") != std::string::npos);
  std::string json = summary_json(info(), s);
  CHECK(json.find("\"roots_blocked\":2") != std::string::npos);
  CHECK(json.find("which stays in the source") != std::string::npos);
  CHECK(metrics_text(info(), s, 1700000000, true).find("goarchive_last_run_roots_blocked{job=\"j\"} 2") !=
        std::string::npos);
}

TEST_CASE("statistics: the deletes' lock windows, mean and max, in the text and the JSON") {
  auto s = stats();
  CHECK(statistics_text(info(), s).find("rows held locked") == std::string::npos);  // nothing deleted: no line
  s.locked_batches = 4;
  s.t_locked = 0.030;
  s.t_locked_max = 0.0125;
  CHECK(statistics_text(info(), s).find("  rows held locked by a delete: mean 7.5 ms, max 12.5 ms (4 transactions)\n") !=
        std::string::npos);
  CHECK(summary_json(info(), s).find(R"("row_locks":{"transactions":4,"mean_ms":7.5,"max_ms":12.5})") !=
        std::string::npos);
}

#include "app/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "util/json.h"
#include "report/summary.h"
#include "util/error.h"

namespace goarchive::app {

namespace {

bool g_json = false;

// stderr, clearing the progress line first when one is drawn, so that a log line never runs into it.
class StderrSink : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    if (report::progress_line_drawn().exchange(false)) std::fputs("\r\033[K", stderr);
    std::fwrite(buf.data(), 1, buf.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

// %* in a JSON pattern: the message as the body of a JSON string (quotes, backslashes and control characters escaped).
class JsonMessage : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string quoted = json_quote(std::string(msg.payload.data(), msg.payload.size()));
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }
};
}  // namespace

void setup_logging(const config::LoggingConfig& logging, int verbose, bool quiet) {
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<StderrSink>());
  if (!logging.file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(logging.file));
    } catch (const spdlog::spdlog_ex& e) {
      throw ConfigError("cannot open the log file " + logging.file + ": " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("goarchive", sinks.begin(), sinks.end());
  // JSON lines carry a versioned schema: {"schema_version":1,"time":..,"level":..,"msg":..}.
  g_json = logging.format == "json";
  if (logging.format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessage>('*').set_pattern(
        R"({"schema_version":1,"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","pid":%P,"msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v", spdlog::pattern_time_type::utc);
  }
  auto level = spdlog::level::from_str(logging.level);
  if (verbose == 1) level = spdlog::level::info;
  if (verbose == 2) level = spdlog::level::debug;
  if (verbose >= 3) level = spdlog::level::trace;
  if (quiet) level = spdlog::level::warn;
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

bool log_is_json() { return g_json; }

}  // namespace goarchive::app

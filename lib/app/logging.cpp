#include "app/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/pattern_formatter.h>
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

// The log file, appended to through a descriptor of our own: spdlog's file sink opens the path with fopen, which
// follows a symlink planted there (a root run would then append to any file).
class AppendFileSink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit AppendFileSink(int fd) : m_fd(fd) {}
  ~AppendFileSink() override { ::close(m_fd); }
  AppendFileSink(const AppendFileSink&) = delete;
  AppendFileSink& operator=(const AppendFileSink&) = delete;

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    for (size_t done = 0; done < buf.size();) {
      ssize_t n = ::write(m_fd, buf.data() + done, buf.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk must not stop the run; stderr still has the line
      done += static_cast<size_t>(n);
    }
  }
  void flush_() override {}

private:
  int m_fd;
};

// Opens the log file for appending, creating it if needed, but never through a symlink at its name (O_NOFOLLOW)
// and never waiting on a FIFO planted there (O_NONBLOCK, dropped once open). Throws ConfigError (exit 2).
int open_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP) {
      throw ConfigError("cannot open the log file " + path + ": it is a symbolic link, which goarchive does not "
                        "follow (one planted in a shared directory could make it write any file); set [logging] "
                        "file or --log-file to the file itself");
    }
    if (err == ENXIO) {
      throw ConfigError("cannot open the log file " + path + ": it is a FIFO that nobody reads; set [logging] "
                        "file or --log-file to a regular file");
    }
    throw ConfigError("cannot open the log file " + path + ": " + std::strerror(err));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

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
    sinks.push_back(std::make_shared<AppendFileSink>(open_log_file(logging.file)));
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

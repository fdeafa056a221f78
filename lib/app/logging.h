#pragma once
// The process's logging: text or JSON lines on stderr and the optional log file. It never decides what to log.
#include "config/config.h"

namespace goarchive::app {

// Sets the default spdlog logger: text or JSON lines on stderr (and the log file), level from config and -v/-q.
void setup_logging(const config::LoggingConfig& logging, int verbose, bool quiet);
// True when logs are JSON lines (the final error message is then a JSON line too).
bool log_is_json();

}  // namespace goarchive::app

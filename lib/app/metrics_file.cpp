#include "app/metrics_file.h"

#include <cstdio>
#include <ctime>
#include <fstream>

#include <spdlog/spdlog.h>

namespace goarchive::app {

void write_metrics(const std::string& path, const report::RunInfo& info, const pipeline::Stats& stats) {
  double now = static_cast<double>(std::time(nullptr));
  std::string text = report::metrics_text(info, stats, now, info.exit_code == 0);
  if (info.exit_code != 0) {
    std::ifstream old(path);
    std::string line;
    while (std::getline(old, line)) {
      if (line.rfind("goarchive_last_success_timestamp_seconds", 0) == 0 ||
          line.rfind("# HELP goarchive_last_success", 0) == 0 || line.rfind("# TYPE goarchive_last_success", 0) == 0) {
        text += line + "\n";
      }
    }
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) {
      spdlog::warn("could not write the metrics file {}", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) spdlog::warn("could not rename {} to {}", tmp, path);
}

}  // namespace goarchive::app

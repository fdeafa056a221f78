#pragma once
// The Prometheus textfile of a run: written to a new file PATH.tmp.XXXXXX (created exclusively: never through a
// planted symlink) and renamed into place, so a collector never reads half a file. A failed run keeps the earlier
// run's last-success timestamp, so that an alert on its age still fires.
#include <string>

#include "pipeline/stats.h"
#include "report/summary.h"

namespace goarchive::app {

void write_metrics(const std::string& path, const report::RunInfo& info, const pipeline::Stats& stats);

}  // namespace goarchive::app

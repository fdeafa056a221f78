#include "app/work_guard.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace goarchive::app {

namespace {

std::string way_out(const tracking::GuardHit& h) {
  if (h.live) return "\n    way out: wait for it to finish, then try again";
  if (h.copied + h.deleting > 0) return fmt::format("\n    way out: rerun job \"{}\" so its recovery finishes its work", h.name);
  return fmt::format("\n    way out: its process is gone with nothing in its log: clear it with "
                     "`goarchive jobs clear -j {}`",
                     h.name);
}

}  // namespace

void check_guard(const tracking::Registry& registry, db::Connection& dst, unsigned long long job_id,
                 const std::vector<std::string>& table_keys, const guard::SourceIdentity& self) {
  auto hits = registry.guard_candidates(dst, job_id, table_keys);
  std::vector<tracking::GuardHit> blocking;
  for (auto& h : hits) {
    if (guard::same_source_data(self, h.source)) blocking.push_back(std::move(h));
  }
  if (blocking.empty()) return;
  bool all_live = std::all_of(blocking.begin(), blocking.end(), [](const auto& h) { return h.live; });
  std::string msg = "this run shares tables with other jobs that are running or hold unfinished work on the same "
                    "source data; this run did nothing:";
  for (const auto& h : blocking) {
    std::string state = h.status == "running" ? (h.live ? "running, live" : "marked running, no heartbeat within 60 s")
                                              : h.status;
    msg += fmt::format("\n  job \"{}\" ({}; unfinished roots: {} copied, {} deleting) shares {}", h.name, state,
                       h.copied, h.deleting, join(h.shared_tables, ", "));
    msg += way_out(h);
  }
  if (all_live) throw BusyError(msg);
  throw Error(msg);
}

}  // namespace goarchive::app

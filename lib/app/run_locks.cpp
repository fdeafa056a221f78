#include "app/run_locks.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "app/session.h"
#include "util/fault.h"

namespace goarchive::app {

LockLost::LockLost(const std::string& where)
    : Error(fmt::format("the run lost its named locks on the {} (its lock session was killed or disconnected); it "
                        "stopped before committing, and the transaction in flight was rolled back. Nothing is "
                        "committed without the locks; rerun the job to finish its work",
                        where)) {}

void ensure_registry(const config::Config& cfg, locks::LockSession& dest_lock, db::Connection& dst,
                     const tracking::Registry& registry) {
  if (registry.ready(dst)) return;
  std::vector<locks::NamedLock> sl = {schema_lock(cfg)};
  dest_lock.name_locks(sl);
  unsigned long long holder = 0;
  double wait = 60;
  if (const char* v = std::getenv("GOARCHIVE_SCHEMA_LOCK_WAIT")) wait = std::atof(v);  // tests only
  if (dest_lock.acquire(sl, wait, holder) >= 0) {
    throw BusyError(fmt::format("the tracking schema {} is being created by another GoArchive run that still holds "
                                "its schema lock after {:.0f} seconds (destination connection {}); this run did "
                                "nothing. Try again later",
                                cfg.destination.job_schema, wait, holder));
  }
  try {
    if (!registry.ready(dst)) {
      fault::point("creating_schema");
      // Up to three more sessions create new tables side by side (each CREATE TABLE waits for its fsyncs).
      registry.create(dst, [&cfg] { return app::connect(cfg.destination, "destination schema creation"); });
    }
  } catch (...) {
    dest_lock.release(sl[0].name);
    throw;
  }
  dest_lock.release(sl[0].name);
}

void acquire_job_lock(locks::LockSession& dest_lock, std::vector<locks::NamedLock>& jl, const config::Job& job) {
  dest_lock.name_locks(jl);
  unsigned long long holder = 0;
  if (dest_lock.acquire(jl, 0, holder) >= 0) {
    throw BusyError(fmt::format("job \"{}\" is already running: its advisory lock is held by another session "
                                "(destination connection {})",
                                job.name, holder));
  }
}

void acquire_table_locks(locks::LockSession& src_lock, std::vector<locks::NamedLock>& tl) {
  src_lock.name_locks(tl);
  // A fixed order (by name) so that two runs can never wait on each other.
  std::sort(tl.begin(), tl.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  unsigned long long holder = 0;
  int failed = src_lock.acquire(tl, 0, holder);
  if (failed >= 0) {
    const auto& l = tl[static_cast<size_t>(failed)];
    throw BusyError(fmt::format("the source table {}.{} is in use by another GoArchive run (source connection\n{}). "
                                "Jobs whose tables overlap run one at a time; this run did nothing.",
                                l.a, l.b, holder));
  }
}

}  // namespace goarchive::app

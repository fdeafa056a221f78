#include "util/fault.h"

#ifdef GOARCHIVE_FAULT_HOOKS
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace goarchive::fault {

void point(const char* name) {
  static const char* spec = std::getenv("GOARCHIVE_FAULT");
  if (!spec || !*spec) return;
  std::string s(spec);
  std::string target = s;
  long want = 1;
  if (auto colon = s.find(':'); colon != std::string::npos) {
    target = s.substr(0, colon);
    want = std::strtol(s.c_str() + colon + 1, nullptr, 10);
  }
  if (target != name) return;
  static std::mutex mutex;
  static long hits = 0;
  std::lock_guard<std::mutex> guard(mutex);
  if (++hits == want) std::raise(SIGKILL);
}

}  // namespace goarchive::fault
#endif

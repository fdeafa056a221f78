#include "util/fault.h"

#ifdef GOARCHIVE_FAULT_HOOKS
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace goarchive::fault {

namespace {

struct Spec {
  std::string point;
  long nth = 1;
  std::string file;  // pause only
};

// "<point>[:<n>][:<file>]"
Spec parse(const char* text) {
  Spec s;
  if (!text || !*text) return s;
  std::string t(text);
  auto colon = t.find(':');
  s.point = t.substr(0, colon);
  if (colon == std::string::npos) return s;
  std::string rest = t.substr(colon + 1);
  auto second = rest.find(':');
  s.nth = std::strtol(rest.substr(0, second).c_str(), nullptr, 10);
  if (second != std::string::npos) s.file = rest.substr(second + 1);
  return s;
}

bool hit(const Spec& spec, const char* name, long& count) {
  static std::mutex mutex;
  if (spec.point != name) return false;
  std::lock_guard<std::mutex> guard(mutex);
  return ++count == spec.nth;
}

}  // namespace

void point(const char* name) {
  static const Spec kill = parse(std::getenv("GOARCHIVE_FAULT"));
  static const Spec pause = parse(std::getenv("GOARCHIVE_PAUSE"));
  static long kills = 0, pauses = 0;
  if (!pause.point.empty() && !pause.file.empty() && hit(pause, name, pauses)) {
    // Tests: say "reached", then wait while the file exists (at most two minutes), so that a test can act at
    // exactly this point (an application write between the copy and the delete, for example).
    std::ofstream(pause.file + ".reached") << name << "\n";
    auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::filesystem::exists(pause.file) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!kill.point.empty() && hit(kill, name, kills)) std::raise(SIGKILL);
}

}  // namespace goarchive::fault
#endif

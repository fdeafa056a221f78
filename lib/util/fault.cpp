#include "util/fault.h"

#include <cstdlib>
#include <string>

#include "util/error.h"

#ifdef GOARCHIVE_FAULT_HOOKS
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#endif

namespace goarchive::fault {

namespace {

constexpr const char* k_fault_var = "GOARCHIVE_FAULT";
constexpr const char* k_pause_var = "GOARCHIVE_PAUSE";

#ifdef GOARCHIVE_FAULT_HOOKS
struct Spec {
  std::string point;
  long nth = 1;
  std::string file;  // pause only
};

std::string known_points() {
  std::string list;
  for (std::string_view p : k_points) list += (list.empty() ? "" : ", ") + std::string(p);
  return list;
}

// "<point>[:<n>]" (GOARCHIVE_FAULT) or "<point>:<n>:<file>" (GOARCHIVE_PAUSE); an empty or unset variable is
// no spec. Throws ConfigError on anything else: a hook that would never fire must not look like a clean run.
Spec parse(const char* var, const char* text) {
  Spec s;
  if (!text || !*text) return s;
  const bool pause = std::string_view(var) == k_pause_var;
  const std::string form = pause ? "<point>:<n>:<file>" : "<point>[:<n>]";
  std::string t(text);
  auto colon = t.find(':');
  s.point = t.substr(0, colon);
  if (!known(s.point)) {
    throw ConfigError(std::string(var) + "=" + t + " names an unknown fault point \"" + s.point +
                      "\"; the known points: " + known_points());
  }
  std::string nth = colon == std::string::npos ? "" : t.substr(colon + 1);
  auto second = nth.find(':');
  if (second != std::string::npos) {
    s.file = nth.substr(second + 1);
    nth.resize(second);
  }
  if (colon != std::string::npos) {
    char* end = nullptr;
    s.nth = std::strtol(nth.c_str(), &end, 10);
    if (nth.empty() || *end != '\0' || s.nth < 1) {
      throw ConfigError(std::string(var) + "=" + t +
                        ": the count after the point must be a whole number >= 1 (" + form + ")");
    }
  }
  if (pause ? s.file.empty() : second != std::string::npos) {
    throw ConfigError(std::string(var) + "=" + t + " is not of the form " + form);
  }
  return s;
}

bool hit(const Spec& spec, const char* name, long& count) {
  static std::mutex mutex;
  if (spec.point != name) return false;
  std::lock_guard<std::mutex> guard(mutex);
  return ++count == spec.nth;
}
#endif

}  // namespace

void check_environment() {
  for (const char* var : {k_fault_var, k_pause_var}) {
    const char* text = std::getenv(var);
    if (!text || !*text) continue;
#ifndef GOARCHIVE_FAULT_HOOKS
    throw ConfigError(std::string(var) + " is set, but this build has no fault hooks (a Debug build, or "
                                         "-DGOARCHIVE_FAULT_HOOKS=ON, has them); unset it");
#else
    parse(var, text);
#endif
  }
}

#ifdef GOARCHIVE_FAULT_HOOKS
void point(Name name) {
  // check_environment() has refused a malformed variable before any point is passed.
  static const Spec kill = parse(k_fault_var, std::getenv(k_fault_var));
  static const Spec pause = parse(k_pause_var, std::getenv(k_pause_var));
  static long kills = 0, pauses = 0;
  if (!pause.point.empty() && hit(pause, name.text, pauses)) {
    // Tests: say "reached", then wait while the file exists (at most two minutes), so that a test can act at
    // exactly this point (an application write between the copy and the delete, for example).
    std::ofstream(pause.file + ".reached") << name.text << "\n";
    auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::filesystem::exists(pause.file) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!kill.point.empty() && hit(kill, name.text, kills)) std::raise(SIGKILL);
}
#endif

}  // namespace goarchive::fault

// The fault hooks' environment: a misspelt point, a malformed spec, or any spec in a build without hooks is
// refused (exit 2) rather than run as if no hook had been asked for. Compiled twice (tests/CMakeLists.txt):
// with the hooks into unit_tests when the build has them, and always without them into unit_fault_no_hooks.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "helpers.h"
#include "util/error.h"
#include "util/fault.h"

namespace fault = goarchive::fault;
using goarchive::ConfigError;
using goarchive::test::message_of;

namespace {

// Sets one variable for the scope and restores the environment after it.
class EnvVar {
public:
  EnvVar(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value, 1);
  }
  ~EnvVar() {
    if (m_old) {
      ::setenv(m_name, m_old->c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

// Runs check_environment() with VAR=VALUE (the other variable unset); "" when it accepts.
std::string refusal(const char* var, const char* value) {
  EnvVar fault_var("GOARCHIVE_FAULT", "");
  EnvVar pause_var("GOARCHIVE_PAUSE", "");
  EnvVar set(var, value);
  return message_of<ConfigError>([] { fault::check_environment(); });
}

}  // namespace

TEST_CASE("fault: unset or empty variables are accepted in every build") {
  EnvVar fault_var("GOARCHIVE_FAULT", "");
  EnvVar pause_var("GOARCHIVE_PAUSE", "");
  fault::check_environment();
}

TEST_CASE("fault: the known points are distinct and known() answers by the list") {
  std::set<std::string_view> names(fault::k_points.begin(), fault::k_points.end());
  CHECK(names.size() == fault::k_points.size());
  CHECK(fault::known("after_batch"));
  CHECK(fault::known("delete_start"));
  CHECK_FALSE(fault::known("after_batches"));
  CHECK_FALSE(fault::known(""));
}

#ifdef GOARCHIVE_SOURCE_DIR
TEST_CASE("fault: k_points is exactly the set of points the code passes") {
  // The compiler already refuses a point() name outside the list; this catches a listed name no code passes
  // any more, which a test could still kill at and never see fire.
  std::set<std::string> used;
  const std::regex call(R"re(fault::point\("([a-z_]+)"\))re");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(GOARCHIVE_SOURCE_DIR "/lib")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator m(text.begin(), text.end(), call), end; m != end; ++m)
      used.insert((*m)[1].str());
  }
  std::set<std::string> listed(fault::k_points.begin(), fault::k_points.end());
  CHECK(used == listed);
}
#endif

#ifdef GOARCHIVE_FAULT_HOOKS
TEST_CASE("fault: well-formed specs of known points are accepted") {
  CHECK(refusal("GOARCHIVE_FAULT", "after_batch") == "<no exception>");
  CHECK(refusal("GOARCHIVE_FAULT", "after_copy_commit:3") == "<no exception>");
  CHECK(refusal("GOARCHIVE_PAUSE", "delete_start:1:/tmp/pause-file") == "<no exception>");
  CHECK(refusal("GOARCHIVE_PAUSE", "after_locked_read:2:/tmp/a:b") == "<no exception>");
}

TEST_CASE("fault: an unknown point is refused, named, with the known points listed") {
  for (const char* var : {"GOARCHIVE_FAULT", "GOARCHIVE_PAUSE"}) {
    CAPTURE(var);
    std::string m =
        refusal(var, std::string(var) == "GOARCHIVE_FAULT" ? "after_batches:2" : "after_batches:1:/tmp/p");
    CHECK(m.find("unknown fault point \"after_batches\"") != std::string::npos);
    CHECK(m.find(var) != std::string::npos);
    for (std::string_view p : fault::k_points) CHECK(m.find(std::string(p)) != std::string::npos);
  }
}

TEST_CASE("fault: a malformed spec is refused") {
  CHECK(refusal("GOARCHIVE_FAULT", "after_batch:0").find("whole number >= 1") != std::string::npos);
  CHECK(refusal("GOARCHIVE_FAULT", "after_batch:x").find("whole number >= 1") != std::string::npos);
  CHECK(refusal("GOARCHIVE_FAULT", "after_batch:").find("whole number >= 1") != std::string::npos);
  CHECK(refusal("GOARCHIVE_FAULT", "after_batch:1:/tmp/f").find("not of the form") != std::string::npos);
  // A pause without its file, or with the file where the count goes, would never pause.
  CHECK(refusal("GOARCHIVE_PAUSE", "after_batch:1").find("not of the form") != std::string::npos);
  CHECK(refusal("GOARCHIVE_PAUSE", "after_batch:/tmp/f").find("whole number >= 1") != std::string::npos);
}
#else
TEST_CASE("fault: a build without hooks refuses either variable, even a valid spec") {
  for (const char* var : {"GOARCHIVE_FAULT", "GOARCHIVE_PAUSE"}) {
    CAPTURE(var);
    CHECK(refusal(var, "after_batch:1:/tmp/p").find("this build has no fault hooks") != std::string::npos);
    CHECK(refusal(var, "no_such_point").find("this build has no fault hooks") != std::string::npos);
  }
}
#endif

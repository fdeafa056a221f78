// libFuzzer target: the config loader (issue 7). Any input must either load or be refused with a
// goarchive::Error (ConfigError); any other exception, crash, sanitizer report or hang is a finding.
// Every loaded job is also turned into its relation tree (plan::Tree), which validates parents and cycles.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "config/config.h"
#include "plan/tree.h"
#include "util/strings.h"
#include "util/error.h"

namespace {
const std::map<std::string, std::string> k_env;  // no GOARCHIVE_* overrides, no password_env variables

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_config: invariant violated: %s\n", what);
  std::fflush(stderr);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    goarchive::config::Config cfg = goarchive::config::load_string(text, "fuzz.toml", k_env);
    for (const auto& [name, job] : cfg.jobs) {
      if (name != job.name) finding("job map key differs from job.name");
      if (job.root_table.empty() || job.where.empty()) finding("a loaded job lacks root_table or where");
      if (job.processing.batch_size < 1 || job.processing.delete_batch_size < 1) finding("batch size below 1");
      try {
        goarchive::plan::Tree tree(job);
        // A table under several parents (a diamond) has one node and one relation per parent.
        std::set<std::string> tables;
        for (const auto& r : job.relations) tables.insert(goarchive::ascii_lower(r.table));
        if (tree.nodes().size() != tables.size() + 1) finding("tree size differs from the related tables + root");
        if (tree.delete_order().size() != tree.nodes().size()) finding("delete order misses a node");
        (void)tree.render();
      } catch (const goarchive::Error&) {
      }
    }
    for (const auto& [key, setting] : cfg.settings) {
      bool is_password = key.size() >= 9 && key.compare(key.size() - 9, 9, ".password") == 0;
      if (is_password && setting.value != "<redacted>") finding("a password setting is not redacted");
    }
  } catch (const goarchive::Error&) {
  }
  return 0;
}

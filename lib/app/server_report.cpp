#include "app/server_report.h"

#include <fmt/format.h>

namespace goarchive::app {

std::string server_report(const db::Connection* source, const db::Connection* destination) {
  std::string out;
  for (auto [role, conn] : {std::pair{"source", source}, std::pair{"destination", destination}}) {
    if (!conn) continue;
    out += fmt::format("{}: {}\n", role, conn->dialect().describe());
    for (const auto& line : conn->dialect().differences()) out += "  " + line + "\n";
  }
  if (source && destination && db::Dialect::json_text_may_change(source->dialect(), destination->dialect())) {
    out += "  JSON: the destination stores JSON binary and rewrites the source's JSON text: archive tables keep "
           "the source's LONGTEXT (goarchive schema), and preflight refuses a json archive column\n";
  }
  return out;
}

}  // namespace goarchive::app

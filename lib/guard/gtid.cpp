#include "guard/gtid.h"

#include <algorithm>

#include "util/strings.h"

namespace goarchive::guard {

std::vector<MariaGtid> parse_mariadb_gtids(const std::string& list) {
  std::vector<MariaGtid> out;
  for (const auto& raw : split(list, ',')) {
    std::string entry = trim(raw);
    auto parts = split(entry, '-');
    if (parts.size() != 3) continue;
    try {
      size_t a = 0, b = 0, c = 0;
      MariaGtid g{std::stoull(parts[0], &a), std::stoull(parts[1], &b), std::stoull(parts[2], &c)};
      if (a == parts[0].size() && b == parts[1].size() && c == parts[2].size()) out.push_back(g);
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::vector<std::string> parse_mysql_gtid_uuids(const std::string& set) {
  std::vector<std::string> out;
  for (const auto& raw : split(set, ',')) {
    std::string entry = trim(raw);
    auto colon = entry.find(':');
    if (colon == std::string::npos || colon == 0) continue;
    std::string uuid = ascii_lower(trim(entry.substr(0, colon)));
    if (uuid.size() == 36) out.push_back(uuid);
  }
  return out;
}

namespace {

bool same_server(const SourceIdentity& a, const SourceIdentity& b) {
  if (a.flavor == "mysql" && b.flavor == "mysql" && !a.server_uuid.empty() && !b.server_uuid.empty()) {
    return ascii_lower(a.server_uuid) == ascii_lower(b.server_uuid);
  }
  if (a.server_id && b.server_id && *a.server_id != *b.server_id) return false;
  return ascii_lower(a.host) == ascii_lower(b.host) && a.port == b.port;
}

// Whether self's GTID history holds transactions that `origin` wrote.
bool holds_transactions_of(const SourceIdentity& self, const SourceIdentity& origin) {
  if (self.flavor == "mysql") {
    if (origin.server_uuid.empty()) return false;
    auto uuids = parse_mysql_gtid_uuids(self.gtid_state);
    return std::find(uuids.begin(), uuids.end(), ascii_lower(origin.server_uuid)) != uuids.end();
  }
  if (!origin.server_id) return false;
  for (const auto& g : parse_mariadb_gtids(self.gtid_state)) {
    if (g.server_id == *origin.server_id && (!origin.gtid_domain || g.domain == *origin.gtid_domain)) return true;
  }
  return false;
}

}  // namespace

bool same_source_data(const SourceIdentity& self, const SourceIdentity& other) {
  if (same_server(self, other)) return true;
  // Where a server cannot tell, every server's database of the same name counts as one.
  if (!self.gtid_known || !other.gtid_known || self.flavor != other.flavor) {
    return ascii_lower(self.database) == ascii_lower(other.database);
  }
  return holds_transactions_of(self, other);
}

}  // namespace goarchive::guard

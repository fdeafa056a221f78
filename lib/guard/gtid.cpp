#include "guard/gtid.h"

#include <algorithm>
#include <cctype>

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
    // "uuid:1-5" and, MySQL 8.3+, "uuid:tag:1-5": the server is the part before the first colon.
    auto colon = entry.find(':');
    if (colon == std::string::npos || colon == 0) continue;
    std::string uuid = ascii_lower(trim(entry.substr(0, colon)));
    if (uuid.size() == 36) out.push_back(uuid);
  }
  return out;
}

namespace {

bool is_uuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// A tag: a letter or underscore, then letters, digits and underscores, at most 32 in all.
bool is_tag(const std::string& s) {
  if (s.empty() || s.size() > 32 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<unsigned long long> number(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  try {
    return std::stoull(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::vector<MysqlGtidInterval>> parse_mysql_gtid_set(const std::string& set) {
  std::vector<MysqlGtidInterval> out;
  for (const auto& raw : split(set, ',')) {
    std::string entry;
    for (char c : raw) {
      if (!std::isspace(static_cast<unsigned char>(c))) entry += c;
    }
    if (entry.empty()) continue;  // '' is the empty set
    auto parts = split(entry, ':');
    if (parts.size() < 2 || !is_uuid(parts[0])) return std::nullopt;
    std::string uuid = ascii_lower(parts[0]), tag;
    bool any = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string& p = parts[i];
      if (is_tag(p)) {
        tag = ascii_lower(p);
        continue;
      }
      auto dash = p.find('-');
      auto first = number(p.substr(0, dash));
      auto last = dash == std::string::npos ? first : number(p.substr(dash + 1));
      if (!first || !last || *first == 0 || *last < *first) return std::nullopt;
      out.push_back(MysqlGtidInterval{uuid, tag, *first, *last});
      any = true;
    }
    if (!any) return std::nullopt;  // a tag with no interval after it
  }
  return out;
}

bool mysql_gtid_subset(const std::string& a, const std::string& b) {
  auto sa = parse_mysql_gtid_set(a), sb = parse_mysql_gtid_set(b);
  if (!sa || !sb) return false;
  for (const auto& x : *sa) {
    // The transactions x.first..x.last of one uuid and tag, covered by b's intervals of the same uuid and tag.
    std::vector<std::pair<unsigned long long, unsigned long long>> cover;
    for (const auto& y : *sb) {
      if (y.uuid == x.uuid && y.tag == x.tag) cover.emplace_back(y.first, y.last);
    }
    std::sort(cover.begin(), cover.end());
    unsigned long long next = x.first;  // the first transaction not yet covered
    for (const auto& [f, l] : cover) {
      if (f > next) break;
      if (l >= next) next = l + 1;
      if (next > x.last) break;
    }
    if (next <= x.last) return false;
  }
  return true;
}

bool mysql_gtid_history_contains(const std::string& later, const std::string& earlier) {
  auto e = parse_mysql_gtid_set(earlier);
  return e && !e->empty() && mysql_gtid_subset(earlier, later);
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
    if (mysql_gtid_history_contains(self.gtid_state, origin.gtid_state)) return true;
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

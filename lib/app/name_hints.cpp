// Owns the did-you-mean hints for names the source lacks (see name_hints.h).
#include "app/name_hints.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::app {

std::string table_hint(db::Connection& conn, const std::string& database, const std::string& table) {
  db::RowSet r = conn.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                            sql::quote(database) + " AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME");
  std::vector<std::string> names;
  for (size_t i = 0; i < r.rows(); ++i) names.push_back(r.text(i, 0));
  auto close = close_matches(table, names);
  if (!close.empty()) return did_you_mean(close);
  if (names.empty()) return "the database has no tables";
  std::vector<std::string> some(names.begin(), names.begin() + static_cast<long>(std::min<size_t>(names.size(), 10)));
  return fmt::format("its tables are: {}{}", join(some, ", "), names.size() > some.size() ? ", ..." : "");
}

std::string column_hint(const schema::TableInfo& t, const std::string& column) {
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  auto close = close_matches(column, names);
  return close.empty() ? "" : " (" + did_you_mean(close) + ")";
}

}  // namespace goarchive::app

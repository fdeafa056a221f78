#include "app/privileges.h"

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::app {

bool has_privilege(db::Connection& conn, const std::string& priv, const std::string& database,
                   const std::string& table) {
  std::string grantee = "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
                        "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')";
  std::string q = fmt::format(
      "SELECT (SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = {0} AND PRIVILEGE_TYPE = {1})"
      " + (SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = {0} AND PRIVILEGE_TYPE = {1} "
      "AND {2} LIKE TABLE_SCHEMA)"
      " + (SELECT COUNT(*) FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = {0} AND PRIVILEGE_TYPE = {1} "
      "AND TABLE_SCHEMA = {2} AND TABLE_NAME = {3})",
      grantee, sql::quote(priv), sql::quote(database), sql::quote(table));
  try {
    return conn.scalar(q).value_or("0") != "0";
  } catch (const db::DbError&) {
    return true;  // cannot tell: the statements themselves will say
  }
}

std::string missing_privileges(db::Connection& conn, const std::vector<std::string>& privs,
                               const std::string& database, const std::string& table, const std::string& where) {
  std::vector<std::string> missing;
  for (const auto& p : privs) {
    if (!has_privilege(conn, p, database, table)) missing.push_back(p);
  }
  if (missing.empty()) return "";
  std::string user = conn.scalar("SELECT CURRENT_USER()").value_or("?");
  auto at = user.find('@');
  return fmt::format("the {} account lacks {} on {}.{}; run on the {}: GRANT {} ON {} TO '{}'@'{}'", where,
                     join(missing, ", "), database, table.empty() ? "*" : table, where, join(missing, ", "),
                     table.empty() ? sql::ident(database) + ".*" : sql::qualified(database, table),
                     user.substr(0, at), at == std::string::npos ? "%" : user.substr(at + 1));
}

}  // namespace goarchive::app

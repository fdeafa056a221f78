// Owns reading and wording the DELETE triggers of a source table (see delete_triggers.h).
#include "app/delete_triggers.h"

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::app {

std::vector<DeleteTrigger> delete_triggers(db::Connection& conn, const std::string& database, const std::string& table) {
  db::RowSet r = conn.query(fmt::format(
      "SELECT TRIGGER_NAME, ACTION_TIMING, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE "
      "EVENT_OBJECT_SCHEMA = {} AND EVENT_OBJECT_TABLE = {} AND EVENT_MANIPULATION = 'DELETE' "
      "ORDER BY ACTION_TIMING = 'AFTER', ACTION_ORDER",
      sql::quote(database), sql::quote(table)));
  std::vector<DeleteTrigger> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back({database, table, r.text(i, 0), r.text(i, 1), r.text(i, 2)});
  return out;
}

std::string trigger_names(const std::vector<DeleteTrigger>& triggers) {
  std::vector<std::string> names;
  for (const auto& t : triggers) names.push_back(fmt::format("{} ({} DELETE)", t.name, t.timing));
  return join(names, ", ");
}

std::string forced_trigger_note(const DeleteTrigger& t, const std::string& mode, size_t limit) {
  // One line: every run of white space (line breaks of a BEGIN ... END body) becomes one space.
  std::string body;
  for (char c : t.statement) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    bool control = (static_cast<unsigned char>(c) < 0x20 && !space) || c == 0x7f;  // never drives a terminal
    if (control) body += '?';
    else if (!space) body += c;
    else if (!body.empty() && body.back() != ' ') body += ' ';
  }
  if (!body.empty() && body.back() == ' ') body.pop_back();
  if (body.size() > limit) {
    while (limit > 0 && (static_cast<unsigned char>(body[limit]) & 0xC0) == 0x80) --limit;  // not inside a character
    body = body.substr(0, limit) + "...";
  }
  return fmt::format("force_triggers: trigger {} ({} DELETE ON {}.{}) fires for each row {} deletes from {}: {}", t.name,
                     t.timing, t.database, t.table, mode, t.table, body);
}

}  // namespace goarchive::app

// The check of every session's settings after goarchive set them (db::session_problem): what an option file, a
// proxy or a plugin may leave that would change copied values.
#include <doctest/doctest.h>

#include "db/connection.h"

using goarchive::db::session_problem;

namespace {
std::vector<std::string> good() {
  return {"utf8mb4", "utf8mb4", "utf8mb4", "utf8mb4_general_ci", "+00:00",
          "NO_AUTO_VALUE_ON_ZERO,STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION"};
}
}  // namespace

TEST_CASE("session: the settings goarchive sets pass, in the server's own order of sql_mode words") {
  CHECK(session_problem(good()) == "");
  auto v = good();
  v[5] = "NO_ENGINE_SUBSTITUTION,STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO";
  CHECK(session_problem(v) == "");
  v[3] = "utf8mb4_0900_ai_ci";  // MySQL 8's default collation of utf8mb4
  CHECK(session_problem(v) == "");
}

TEST_CASE("session: each setting that would change values is named") {
  auto v = good();
  v[0] = "utf8mb3";  // a defaults file's default-character-set = utf8
  CHECK(session_problem(v) == "has character_set_client = utf8mb3 (not utf8mb4)");
  v = good();
  v[2] = "NULL";
  CHECK(session_problem(v) == "has character_set_results = NULL (not utf8mb4)");
  v = good();
  v[3] = "latin1_swedish_ci";
  CHECK(session_problem(v) == "has collation_connection = latin1_swedish_ci (not utf8mb4)");
  v = good();
  v[4] = "SYSTEM";
  CHECK(session_problem(v) == "has time_zone = SYSTEM (not +00:00)");
  v = good();
  v[5] = "STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION";
  CHECK(session_problem(v).rfind("has sql_mode = STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION (not ", 0) == 0);
  v[5] = "NO_AUTO_VALUE_ON_ZERO,STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,ANSI_QUOTES";
  CHECK(session_problem(v) != "");
  CHECK(session_problem({"utf8mb4"}) == "settings could not be read");
}

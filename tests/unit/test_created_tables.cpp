// Every table goarchive creates itself carries a primary key, so that a server that requires one (MySQL's
// sql_require_primary_key, error 3750; MariaDB's innodb_force_primary_key, error 1173) never refuses goarchive's
// own DDL: the registry's tables (tracking_schema/*.sql, embedded). The archive owner record and the commit proofs'
// table are created with a PRIMARY KEY in their one statement (tracking/archive_owner.cpp, pipeline/commit_proof.cpp);
// archive tables come from the source's definition, whose primary key preflight and `schema` require. The whole set
// is run for real under innodb_force_primary_key = ON by tests/integration/test_dialect_errors.py.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "tracking/migrations.h"
#include "util/strings.h"

TEST_CASE("created tables: every registry table has a primary key") {
  size_t tables = 0;
  for (const auto& m : goarchive::tracking::migrations()) {
    const std::string text = m.sql;
    size_t start = 0;
    while ((start = text.find("CREATE TABLE", start)) != std::string::npos) {
      size_t end = text.find(";\n", start);
      std::string stmt = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      CAPTURE(m.file);
      CAPTURE(stmt);
      CHECK(std::regex_search(stmt, std::regex(R"(PRIMARY\s+KEY\s*\()", std::regex::icase)));
      ++tables;
      start = end == std::string::npos ? text.size() : end;
    }
  }
  CHECK(tables >= 13);  // 001: 9, 002: 2, 003: 1, 004: 1
}

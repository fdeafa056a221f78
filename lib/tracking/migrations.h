#pragma once
// The tracking schema migrations, embedded at build time from tracking_schema/*.sql.
#include <string>
#include <vector>

namespace goarchive::tracking {

struct Migration {
  int version;
  const char* file;
  const char* sql;  // statements separated by ";\n"; "{schema}" stands for the quoted job_schema
};

const std::vector<Migration>& migrations();

}  // namespace goarchive::tracking

#pragma once
// Validation of names and the `where` condition taken from the config (no server needed).
#include <string>

namespace goarchive::config {

// A table, column or schema name: 1..64 characters, no NUL or control characters, no trailing space.
void check_identifier(const std::string& name, const std::string& key);
// A job name: 1..64 of [A-Za-z0-9_.-] (it appears in lock names, SQL comments and file names).
void check_job_name(const std::string& name, const std::string& where);
// The `where` condition: one boolean expression. Refuses a second statement, comments, unbalanced quotes or
// parentheses, so that it cannot escape the parentheses goarchive puts around it.
void check_where(const std::string& condition, const std::string& key);

}  // namespace goarchive::config

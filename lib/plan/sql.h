#pragma once
// Pure SQL text: quoting, literals, and the statements the pipeline sends. No server needed.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goarchive::sql {

// `name` with backticks doubled: the one way goarchive writes an identifier.
std::string ident(std::string_view name);
// `db`.`table`
std::string qualified(std::string_view database, std::string_view table);
// A quoted string literal, escaped for sql_mode without NO_BACKSLASH_ESCAPES (goarchive sets its sessions' sql_mode).
std::string quote(std::string_view value);
// X'..' hex literal for binary data.
std::string hex_literal(std::string_view bytes);
// Comma-separated literals of VALUES: quoted strings, or hex literals when BINARY.
std::string literal_list(const std::vector<std::string>& values, bool binary);
// A value as a literal: NULL, X'..' when binary, else a quoted string.
std::string literal(const std::optional<std::string>& value, bool binary);
// The same, but bare digits for a whole number compared with an integer column (`integer`): the server then
// compares integers instead of converting every quoted constant. Any other text stays quoted.
std::string literal(const std::optional<std::string>& value, bool binary, bool integer);
// Comma-separated quoted identifiers.
std::string ident_list(const std::vector<std::string>& names);
// "/* goarchive job=<job> run=<run> */" (job names are restricted so they cannot close the comment).
std::string tag(std::string_view job, long long run_id);

// One key (or foreign-key) value: a literal per column.
using KeyLiterals = std::vector<std::string>;

// `(a, b) > (x, y)` expanded to `a > x OR (a = x AND b > y)` so every server uses the index range.
std::string keyset_after(const std::vector<std::string>& columns, const KeyLiterals& last);
// Membership of many keys: `a IN (..)` for one column, `(a, b) IN ((x, y), ..)` for several (one key:
// `(a = x AND b = y)`), split into OR-ed lists of at most 999 values. The same text for every statement kind
// (SELECT, SELECT .. FOR UPDATE, DELETE, child lookups by foreign key): each is an index range read on MariaDB 10.11
// and MySQL 8.0. With `alias`, each column is written as alias.`column`. Throws when a key has the wrong arity.
std::string key_in(const std::vector<std::string>& columns, const std::vector<KeyLiterals>& keys,
                   const std::string& alias = "");

}  // namespace goarchive::sql

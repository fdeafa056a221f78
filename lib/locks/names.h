#pragma once
// Lock names of seed 001: prefix + first 32 hex digits of SHA-256(LOWER(a) 0x00 LOWER(b)).
#include <string>
#include <string_view>

namespace goarchive::locks {

enum class LockKind { schema, job, table };

// The prefix "goarchive:s:", "goarchive:j:" or "goarchive:t:".
const char* prefix(LockKind kind);
// The name computed on the client with ASCII lowering. It equals the server's for ASCII names; goarchive asks the
// server that holds the lock for the name (server_expression) so that non-ASCII names match too.
std::string client_name(LockKind kind, std::string_view a, std::string_view b);
// The SQL expression that computes the name on the server from two string literals (already quoted).
std::string server_expression(LockKind kind, const std::string& a_literal, const std::string& b_literal);

}  // namespace goarchive::locks

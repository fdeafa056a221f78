#include "locks/names.h"

#include "util/strings.h"

namespace goarchive::locks {

const char* prefix(LockKind kind) {
  switch (kind) {
    case LockKind::schema: return "goarchive:s:";
    case LockKind::job: return "goarchive:j:";
    case LockKind::table: return "goarchive:t:";
  }
  return "goarchive:?:";
}

std::string client_name(LockKind kind, std::string_view a, std::string_view b) {
  std::string bytes = ascii_lower(a);
  bytes.push_back('\0');
  bytes += ascii_lower(b);
  return std::string(prefix(kind)) + to_hex(sha256(bytes)).substr(0, 32);
}

std::string server_expression(LockKind kind, const std::string& a_literal, const std::string& b_literal) {
  return std::string("CONCAT('") + prefix(kind) + "', LEFT(SHA2(CONCAT(LOWER(" + a_literal + "), CHAR(0), LOWER(" +
         b_literal + ")), 256), 32))";
}

}  // namespace goarchive::locks

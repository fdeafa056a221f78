#pragma once
// SQL text shared by the registry's source files: the liveness expression, literal lists and the error of a
// guarded write that changed the wrong number of rows. Internal to lib/tracking; never included elsewhere.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/error.h"

namespace goarchive::tracking::detail {

// Liveness is judged on the registry server's clock, never the client's (seed 000).
inline constexpr const char* k_live_expr = "(heartbeat_at > NOW(6) - INTERVAL 60 SECOND)";

inline std::string in_list(const std::vector<std::string>& values) { return sql::literal_list(values, false); }
inline std::string hex_list(const std::vector<std::string>& values) { return sql::literal_list(values, true); }

[[noreturn]] inline void preempted(const std::string& what, uint64_t got, size_t expected) {
  throw Error(fmt::format("tracking registry: {} changed {} row(s) where {} were expected; another session changed "
                          "this job's state (a stale write was refused). Nothing was committed; rerun the job",
                          what, got, expected));
}

}  // namespace goarchive::tracking::detail

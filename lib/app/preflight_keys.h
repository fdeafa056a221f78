#pragma once
// Preflight's checks of the foreign keys around a job: every foreign key between two of its tables must be one of
// its relations (a further parent is advised; a self-reference or a cycle is refused for good), and a foreign key
// from outside into the job must be RESTRICT / NO ACTION (otherwise: add that table, or archive it first). Each
// refusal gives one way out, and following it never leads back to another refusal's advice.
#include <string>
#include <vector>

#include "config/config.h"
#include "plan/tree.h"
#include "schema/catalog.h"

namespace goarchive::app {

// The refusals, one sentence each, for the job's source tables (by node index). `deletes`: archive or purge.
std::vector<std::string> foreign_key_findings(const config::Job& job, const plan::Tree& tree,
                                              const std::vector<schema::TableInfo>& tables, bool deletes);

}  // namespace goarchive::app

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

// `[[jobs.J.relations]] table = "payment" parent = "rental" foreign_key = ["rental_id"]`: the relation of job `job`
// that follows foreign key `fk` into `parent`, as advice (one form, so that a person or a test can follow it
// literally).
std::string relation_block(const std::string& job, const schema::ForeignKey& fk, const schema::TableInfo& parent);

// "FK_InvoiceLineInvoiceId (InvoiceId), fk_b (a, b)": the foreign keys `child` declares to table `parent`; "" when
// none.
std::string foreign_keys_to(const schema::TableInfo& child, const std::string& parent);

// One refusal: a sentence, and whether only the config file can fix it (a relation whose foreign_key is mistyped).
struct KeyFinding {
  std::string message;
  bool config = false;
};

// The refusals for the job's source tables (by node index). `deletes`: archive or purge.
std::vector<KeyFinding> foreign_key_findings(const config::Job& job, const plan::Tree& tree,
                                             const std::vector<schema::TableInfo>& tables, bool deletes);

}  // namespace goarchive::app

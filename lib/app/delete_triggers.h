#pragma once
// The DELETE triggers on a job's source tables, as preflight words them: a run that deletes would fire each one for
// every row it deletes, so preflight refuses unless the job opts in (force_triggers / --force-triggers), and then
// states what each trigger does. Only reads.
#include <string>
#include <vector>

#include "db/connection.h"

namespace goarchive::app {

struct DeleteTrigger {
  std::string database, table, name;
  std::string timing;     // BEFORE or AFTER
  std::string statement;  // its body (information_schema.TRIGGERS.ACTION_STATEMENT)
};

// The DELETE triggers on `database`.`table`, in the order they fire (BEFORE ones first).
std::vector<DeleteTrigger> delete_triggers(db::Connection& conn, const std::string& database, const std::string& table);

// "trg_del (BEFORE DELETE)" for each trigger, comma-separated.
std::string trigger_names(const std::vector<DeleteTrigger>& triggers);

// "trigger trg_del (BEFORE DELETE ON shop.items) fires for each row archive deletes from items: INSERT INTO ..."
// with the statement on one line, cut after `limit` characters ("...").
std::string forced_trigger_note(const DeleteTrigger& t, const std::string& mode, size_t limit = 200);

}  // namespace goarchive::app

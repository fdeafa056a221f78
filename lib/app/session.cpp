#include "app/session.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/strings.h"

namespace goarchive::app {

std::unique_ptr<db::Connection> connect(const config::ServerConfig& server, const std::string& purpose,
                                        const std::string& tag) {
  db::ConnectOptions o;
  o.purpose = purpose;
  auto c = std::make_unique<db::Connection>(server, o);
  if (!tag.empty()) c->set_tag(tag);
  return c;
}

guard::SourceIdentity source_identity(db::Connection& source, const config::ServerConfig& cfg) {
  guard::SourceIdentity id;
  id.host = cfg.socket.empty() ? cfg.host : cfg.socket;
  id.port = static_cast<unsigned>(cfg.port);
  id.database = cfg.database;
  const db::Dialect& dialect = source.dialect();
  id.flavor = dialect.flavor_name();
  db::RowSet r = source.query(dialect.identity_sql());
  if (dialect.gtid_domain_server_seq()) {
    id.server_id = std::stoull(r.text(0, 0));
    id.gtid_known = r.text(0, 4) == "1";
    if (id.gtid_known) id.gtid_domain = std::stoull(r.text(0, 1));
    id.gtid_state = r.text(0, 2) + "," + r.text(0, 3);
  } else {
    id.server_id = std::stoull(r.text(0, 0));
    id.server_uuid = r.text(0, 1);
    id.gtid_known = r.text(0, 2) == "ON";
    id.gtid_state = r.text(0, 3);
    try {
      // A Group Replication member cannot tell the group's servers apart by GTID.
      auto group = source.scalar("SELECT @@group_replication_group_name");
      if (group && !group->empty()) id.gtid_known = false;
    } catch (const db::DbError&) {
    }
  }
  return id;
}

std::vector<locks::NamedLock> job_locks(const config::Config& cfg, const config::Job& job) {
  const std::string& js = cfg.destination.job_schema;
  return {locks::NamedLock{locks::LockKind::job, js, job.name, "",
                           fmt::format("job \"{}\" in tracking schema {} (destination)", job.name, js)}};
}

std::vector<locks::NamedLock> table_locks(const config::Config& cfg, const plan::Tree& tree) {
  std::vector<locks::NamedLock> out;
  for (const auto& n : tree.nodes()) {
    out.push_back(locks::NamedLock{locks::LockKind::table, cfg.source.database, n.table, "",
                                   fmt::format("source table {}.{}", cfg.source.database, n.table)});
  }
  return out;
}

locks::NamedLock schema_lock(const config::Config& cfg) {
  const std::string& js = cfg.destination.job_schema;
  return locks::NamedLock{locks::LockKind::schema, js, "", "",
                          fmt::format("creation of tracking schema {} (destination)", js)};
}

std::string root_scope(const config::Config& cfg, const config::Job& job) {
  std::string s = ascii_lower(cfg.source.socket.empty() ? fmt::format("{}:{}", cfg.source.host, cfg.source.port)
                                                         : cfg.source.socket);
  s += '\0';
  s += ascii_lower(cfg.source.database);
  s += '\0';
  s += ascii_lower(job.root_table);
  return to_hex(sha256(s)).substr(0, 32);
}

}  // namespace goarchive::app

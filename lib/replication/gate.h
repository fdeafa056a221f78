#pragma once
// Replication gating for archive and purge: hold while a replica lags, stopped, NULL lag or unreachable.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "db/connection.h"

namespace goarchive::replication {

// One row of SHOW ALL SLAVES STATUS (MariaDB) or SHOW REPLICA STATUS (MySQL), by column name.
using StatusRow = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Why a replica holds the run, or nullopt when it is healthy. Pure: unit-tested on recorded output.
std::optional<std::string> evaluate(const std::string& replica, const std::vector<StatusRow>& rows, double max_lag);

class Gate {
public:
  explicit Gate(const config::ReplicationConfig& cfg);
  bool enabled() const { return m_cfg.enabled; }
  // The first reason any replica gives to hold, or nullopt.
  std::optional<std::string> check();
  double check_interval() const { return m_cfg.check_interval; }
  double max_hold() const { return m_cfg.max_hold; }

private:
  config::ReplicationConfig m_cfg;
  std::vector<std::unique_ptr<db::Connection>> m_conns;
};

}  // namespace goarchive::replication

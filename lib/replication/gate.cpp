#include "replication/gate.h"

#include <fmt/format.h>

namespace goarchive::replication {

namespace {
using Col = db::Dialect::StatusColumn;
const std::vector<const char*>& column(Col which) { return db::Dialect::status_column(which); }

std::optional<std::string> field(const StatusRow& row, const std::vector<const char*>& names) {
  for (const char* n : names) {
    for (const auto& [k, v] : row) {
      if (k == n) return v.value_or("NULL");
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> evaluate(const std::string& replica, const std::vector<StatusRow>& rows, double max_lag) {
  if (rows.empty()) return fmt::format("replica {} is not replicating (no replication channel)", replica);
  for (const auto& row : rows) {
    std::string channel = field(row, column(Col::channel)).value_or("");
    if (channel == "NULL") channel.clear();
    std::string name = channel.empty() ? replica : fmt::format("{} channel '{}'", replica, channel);
    auto io = field(row, column(Col::io_running)).value_or("No");
    auto sqlt = field(row, column(Col::sql_running)).value_or("No");
    if (io != "Yes") return fmt::format("replica {} IO thread is not running ({})", name, io);
    if (sqlt != "Yes") return fmt::format("replica {} SQL thread is not running", name);
    auto lag = field(row, column(Col::lag)).value_or("NULL");
    if (lag == "NULL" || lag.empty()) return fmt::format("replica {} lag is unknown (NULL)", name);
    double seconds = std::stod(lag);
    if (seconds > max_lag) return fmt::format("replica lag {}s on {} (max {}s)", lag, name, max_lag);
  }
  return std::nullopt;
}

Gate::Gate(const config::ReplicationConfig& cfg) : m_cfg(cfg) { m_conns.resize(cfg.servers.size()); }

std::optional<std::string> Gate::check() {
  if (!m_cfg.enabled) return std::nullopt;
  for (size_t i = 0; i < m_cfg.servers.size(); ++i) {
    const auto& s = m_cfg.servers[i];
    std::string name = s.socket.empty() ? fmt::format("{}:{}", s.host, s.port) : s.socket;
    try {
      if (!m_conns[i]) {
        db::ConnectOptions o;
        o.purpose = "replica monitor";
        o.read_timeout = 10;
        m_conns[i] = std::make_unique<db::Connection>(s, o);
      }
      db::Connection& c = *m_conns[i];
      db::RowSet r = c.query(c.dialect().replica_status_sql());
      std::vector<StatusRow> rows;
      for (size_t row = 0; row < r.rows(); ++row) {
        StatusRow sr;
        for (size_t col = 0; col < r.cols(); ++col) sr.emplace_back(r.names()[col], r.get(row, col));
        rows.push_back(std::move(sr));
      }
      if (auto why = evaluate(name, rows, m_cfg.max_lag_seconds)) return why;
    } catch (const std::exception& e) {
      m_conns[i].reset();
      return fmt::format("replica {} is unreachable: {}", name, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace goarchive::replication

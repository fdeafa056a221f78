#include "pipeline/partition_plan.h"

#include <fmt/format.h>

#include "plan/sql.h"

namespace goarchive::pipeline {

std::string table_route(const config::Job& job, Mode mode, const schema::TableInfo& root,
                        const std::vector<PartitionFacts>& partitions, bool outside_refs) {
  if (partitions.empty()) return "the table is not partitioned";
  if (job.partitions == "off") return "partitions = \"off\"";
  if (mode == Mode::copy_only) return "copy-only changes nothing in the source: it reads every row";
  if (mode == Mode::restore) return "restore puts rows back one by one";
  if (!job.relations.empty()) return "the job has child tables";
  if (outside_refs) return "tables outside the job reference it";
  const std::string& method = partitions.front().method;
  if (method != "RANGE" && method != "RANGE COLUMNS") {
    return fmt::format("it is partitioned by {}, not by RANGE or RANGE COLUMNS", method);
  }
  if (partitions.front().subpartitioned) return "it has subpartitions";
  if (job.force_triggers && root.has_trigger("DELETE")) {
    return "force_triggers: its DELETE triggers fire only for rows deleted one by one";
  }
  if (root.has_trigger("INSERT")) return "an INSERT trigger would fire for rows outside where that go back";
  if (partitions.size() < 2) return "it has one partition";
  return "";
}

std::vector<PartitionChoice> choose(const std::vector<PartitionFacts>& partitions, const std::string& table_reason) {
  std::vector<PartitionChoice> out;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const PartitionFacts& p = partitions[i];
    PartitionChoice c{p.name, p.description, p.rows_estimate, PartitionRoute::rows, ""};
    if (!table_reason.empty()) {
      c.reason = table_reason;
    } else if (i + 1 == partitions.size() || p.description == "MAXVALUE") {
      c.reason = "the last partition: new rows land in it";
    } else if (!p.any_row || !p.outside_where) {
      c.reason = "its rows were not read";
    } else if (!*p.any_row) {
      c.route = PartitionRoute::none;
      c.reason = "empty";
    } else if (*p.outside_where) {
      c.reason = "it holds rows outside where";
    } else {
      c.route = PartitionRoute::whole;
      c.reason = "every row matches where";
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<PartitionFacts> read_partitions(db::Connection& conn, const std::string& database,
                                            const std::string& table) {
  db::RowSet r = conn.query(fmt::format(
      "SELECT PARTITION_NAME, PARTITION_METHOD, PARTITION_DESCRIPTION, TABLE_ROWS, SUBPARTITION_METHOD, "
      "PARTITION_EXPRESSION "
      "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND PARTITION_NAME IS NOT NULL "
      "ORDER BY PARTITION_ORDINAL_POSITION, SUBPARTITION_ORDINAL_POSITION",
      sql::quote(database), sql::quote(table)));
  std::vector<PartitionFacts> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (!out.empty() && out.back().name == r.text(i, 0)) continue;  // one row per subpartition
    PartitionFacts p;
    p.name = r.text(i, 0);
    p.method = r.get(i, 1).value_or("");
    p.description = r.get(i, 2).value_or("");
    p.rows_estimate = r.is_null(i, 3) ? 0 : std::stoull(r.text(i, 3));
    p.subpartitioned = !r.is_null(i, 4);
    p.expression = r.get(i, 5).value_or("");
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<PartitionChoice> plan_partitions(const Context& ctx, db::Connection& conn) {
  const TableMeta& root = ctx.root();
  std::vector<PartitionFacts> parts = read_partitions(conn, root.source.database, root.node.table);
  const std::string why = table_route(ctx.job, ctx.mode, root.source, parts, !root.outside.empty());
  if (why.empty()) {
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      PartitionFacts& p = parts[i];
      if (p.description == "MAXVALUE") continue;
      const std::string from = fmt::format("{} PARTITION ({}) AS {}", root.source_name, sql::ident(p.name),
                                           sql::ident(root.node.table));
      db::RowSet r = conn.query(fmt::format(
          "SELECT EXISTS (SELECT 1 FROM {0} LIMIT 1), EXISTS (SELECT 1 FROM {0} WHERE {1} LIMIT 1)",
          from, not_true(ctx.job.where)));
      p.any_row = r.text(0, 0) == "1";
      p.outside_where = r.text(0, 1) == "1";
    }
  }
  return choose(parts, why);
}

std::string not_true(const std::string& where) {
  return fmt::format("(NOT ({0}) OR ({0}) IS NULL)", where);
}

std::string describe(const PartitionChoice& c) {
  const char* route = c.route == PartitionRoute::whole ? "whole" : c.route == PartitionRoute::rows ? "row path" : "nothing";
  return fmt::format("partition {} (values less than {}, ~{} rows): {}: {}", c.name, c.description, c.rows_estimate,
                     route, c.reason);
}

}  // namespace goarchive::pipeline

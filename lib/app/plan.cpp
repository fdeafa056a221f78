// plan, version and the names of the modes: what needs the config alone (no server).
#include <iostream>

#include <fmt/format.h>
#include <mysql.h>
#include <openssl/opensslv.h>
#include <spdlog/version.h>
#include <toml++/toml.h>

#include "app/commands.h"
#include "app/session.h"
#include "pipeline/context.h"
#include "util/json.h"
#include "build_info.h"
#include "plan/tree.h"
#include "util/strings.h"

namespace goarchive::app {

const char* to_string(Mode mode) { return pipeline::mode_name(to_pipeline(static_cast<int>(mode))); }

std::string version_text() {
  return fmt::format("goarchive {} (commit {})\nMariaDB Connector/C {}\ntoml++ {}.{}.{}\nspdlog {}.{}.{}\nfmt {}\n{}\n",
                     GOARCHIVE_VERSION, GOARCHIVE_GIT_COMMIT, mysql_get_client_info(), TOML_LIB_MAJOR,
                     TOML_LIB_MINOR, TOML_LIB_PATCH, SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH,
                     FMT_VERSION, OPENSSL_VERSION_TEXT);
}

namespace {

std::vector<std::string> table_names(const plan::Tree& tree, const std::vector<int>& order) {
  std::vector<std::string> out;
  for (int i : order) out.push_back(tree.nodes()[static_cast<size_t>(i)].table);
  return out;
}

Json string_array(const std::vector<std::string>& values) {
  Json a = Json::array();
  for (const auto& v : values) a.push(Json(v));
  return a;
}

// One table of the graph: its primary parent, its columns, its depth and its further parents.
Json table_json(const plan::Tree& tree, const plan::Node& n) {
  Json t = Json::object();
  t.set("table", Json(n.table));
  t.set("parent", n.parent < 0 ? Json() : Json(tree.nodes()[static_cast<size_t>(n.parent)].table));
  t.set("foreign_key", string_array(n.foreign_key));
  t.set("references", string_array(n.references));
  t.set("depth", Json(n.depth));
  Json also = Json::array();
  for (const auto& e : n.also) {
    Json a = Json::object();
    a.set("parent", Json(tree.nodes()[static_cast<size_t>(e.parent)].table));
    a.set("foreign_key", string_array(e.foreign_key));
    a.set("references", string_array(e.references));
    also.push(a);
  }
  t.set("also_under", also);
  return t;
}

// What the partition path will do, as far as the config tells without a server (dry-run and validate ask it).
std::string partitions_note(const config::Job& job) {
  if (job.partitions == "off") return "partitions: off (every row by the row path)";
  if (!job.relations.empty()) return "partitions: the job has child tables: every row by the row path";
  return "partitions: auto: if the root table is partitioned by RANGE, each partition wholly inside where leaves as "
         "one piece (archive, purge); dry-run and validate name each partition's path against the server";
}

void print_json(const config::Config& cfg, const config::Job& job, const std::string& job_name,
                const plan::Tree& tree, const std::string& prefix) {
  Json out = Json::object();
  out.set("schema_version", Json(1));
  out.set("job", Json(job_name));
  out.set("root_table", Json(job.root_table));
  out.set("where", Json(job.where));
  Json tables = Json::array();
  for (const auto& n : tree.nodes()) tables.push(table_json(tree, n));
  out.set("tables", tables);
  out.set("copy_order", string_array(table_names(tree, tree.copy_order())));
  out.set("delete_order", string_array(table_names(tree, tree.delete_order())));
  Json restore = Json::object();  // goarchive restore: the same orders, the ends swapped
  restore.set("copy_into_source", string_array(table_names(tree, tree.copy_order())));
  restore.set("remove_from_archive", string_array(table_names(tree, tree.delete_order())));
  out.set("restore", restore);
  if (tree.has_diamonds()) out.set("rule", Json(plan::k_diamond_rule));
  Json settings = Json::object();
  for (const auto& [k, s] : cfg.settings) {
    if (k.rfind(prefix, 0) == 0) settings.set(k.substr(prefix.size()), Json(s.value));
  }
  out.set("settings", settings);
  out.set("partitions", Json(partitions_note(job)));
  std::cout << out.dump() << "\n";
}

void print_text(const config::Config& cfg, const config::Job& job, const std::string& job_name,
                const plan::Tree& tree, const std::string& prefix) {
  std::cout << "job " << job_name << ": root table " << job.root_table << " where " << job.where << "\n\n";
  std::cout << tree.render_plan() << "\nsettings:\n";
  for (const auto& [k, s] : cfg.settings) {
    if (k.rfind(prefix, 0) == 0 && k != prefix + "root_table" && k != prefix + "where") {
      std::cout << fmt::format("  {:<20} {}\n", k.substr(prefix.size()), s.value.empty() ? "\"\"" : s.value);
    }
  }
  std::cout << "\n" << partitions_note(job) << "\n";
}

}  // namespace

int plan(const config::Config& cfg, const std::string& job_name, Format format) {
  const config::Job& job = cfg.job(job_name);
  plan::Tree tree(job);
  std::string prefix = "jobs." + job_name + ".";
  if (format == Format::json) print_json(cfg, job, job_name, tree, prefix);
  else print_text(cfg, job, job_name, tree, prefix);
  return 0;
}

}  // namespace goarchive::app

#include <iostream>

#include <fmt/format.h>
#include <mysql.h>
#include <openssl/opensslv.h>
#include <spdlog/version.h>
#include <toml++/toml.h>

#include "app/commands.h"
#include "util/json.h"
#include "build_info.h"
#include "plan/tree.h"
#include "util/strings.h"

namespace goarchive::app {

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::archive: return "archive";
    case Mode::copy_only: return "copy-only";
    case Mode::purge: return "purge";
  }
  return "?";
}

std::string version_text() {
  return fmt::format("goarchive {} (commit {})\nMariaDB Connector/C {}\ntoml++ {}.{}.{}\nspdlog {}.{}.{}\nfmt {}\n{}\n",
                     GOARCHIVE_VERSION, GOARCHIVE_GIT_COMMIT, mysql_get_client_info(), TOML_LIB_MAJOR,
                     TOML_LIB_MINOR, TOML_LIB_PATCH, SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH,
                     FMT_VERSION, OPENSSL_VERSION_TEXT);
}

int plan(const config::Config& cfg, const std::string& job_name, Format format) {
  const config::Job& job = cfg.job(job_name);
  plan::Tree tree(job);
  std::vector<std::string> copy, del;
  for (int i : tree.copy_order()) copy.push_back(tree.nodes()[static_cast<size_t>(i)].table);
  for (int i : tree.delete_order()) del.push_back(tree.nodes()[static_cast<size_t>(i)].table);
  std::string prefix = "jobs." + job_name + ".";
  if (format == Format::json) {
    Json out = Json::object();
    out.set("schema_version", Json(1));
    out.set("job", Json(job_name));
    out.set("root_table", Json(job.root_table));
    out.set("where", Json(job.where));
    Json tables = Json::array();
    for (const auto& n : tree.nodes()) {
      Json t = Json::object();
      t.set("table", Json(n.table));
      t.set("parent", n.parent < 0 ? Json() : Json(tree.nodes()[static_cast<size_t>(n.parent)].table));
      Json fk = Json::array();
      for (const auto& c : n.foreign_key) fk.push(Json(c));
      t.set("foreign_key", fk);
      Json refs = Json::array();
      for (const auto& c : n.references) refs.push(Json(c));
      t.set("references", refs);
      t.set("depth", Json(n.depth));
      Json also = Json::array();
      for (const auto& e : n.also) {
        Json a = Json::object();
        a.set("parent", Json(tree.nodes()[static_cast<size_t>(e.parent)].table));
        Json afk = Json::array();
        for (const auto& c : e.foreign_key) afk.push(Json(c));
        a.set("foreign_key", afk);
        Json arefs = Json::array();
        for (const auto& c : e.references) arefs.push(Json(c));
        a.set("references", arefs);
        also.push(a);
      }
      t.set("also_under", also);
      tables.push(t);
    }
    out.set("tables", tables);
    Json co = Json::array(), dor = Json::array();
    for (const auto& t : copy) co.push(Json(t));
    for (const auto& t : del) dor.push(Json(t));
    out.set("copy_order", co);
    out.set("delete_order", dor);
    if (tree.has_diamonds()) out.set("rule", Json(plan::k_diamond_rule));
    Json settings = Json::object();
    for (const auto& [k, s] : cfg.settings) {
      if (k.rfind(prefix, 0) == 0) settings.set(k.substr(prefix.size()), Json(s.value));
    }
    out.set("settings", settings);
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << "job " << job_name << ": root table " << job.root_table << " where " << job.where << "\n\n";
  std::cout << tree.render_plan() << "\nsettings:\n";
  for (const auto& [k, s] : cfg.settings) {
    if (k.rfind(prefix, 0) == 0 && k != prefix + "root_table" && k != prefix + "where") {
      std::cout << fmt::format("  {:<20} {}\n", k.substr(prefix.size()), s.value.empty() ? "\"\"" : s.value);
    }
  }
  return 0;
}

}  // namespace goarchive::app

#include "plan/tree.h"

#include <deque>
#include <map>

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace goarchive::plan {

Tree::Tree(const config::Job& job) {
  m_nodes.push_back(Node{job.root_table, -1, {}, {}, {}, 0});
  std::map<std::string, int> index{{job.root_table, 0}};
  for (const auto& rel : job.relations) {
    if (index.count(rel.table)) {
      throw ConfigError(fmt::format("job \"{}\": table {} is listed twice in the tree{}; each table may appear once, "
                                    "under one parent",
                                    job.name, rel.table, rel.table == job.root_table ? " (it is the root table)" : ""));
    }
    index[rel.table] = static_cast<int>(m_nodes.size());
    m_nodes.push_back(Node{rel.table, -1, rel.foreign_key, rel.references, {}, 0});
  }
  for (size_t i = 0; i < job.relations.size(); ++i) {
    const auto& rel = job.relations[i];
    std::string parent = rel.parent.empty() ? job.root_table : rel.parent;
    auto it = index.find(parent);
    if (it == index.end()) {
      throw ConfigError(fmt::format("job \"{}\": relation {} names parent {}, which is neither the root table {} nor "
                                    "another relation's table; add a relation for {} or fix the name",
                                    job.name, rel.table, parent, job.root_table, parent));
    }
    if (it->second == static_cast<int>(i + 1)) {
      throw ConfigError(fmt::format("job \"{}\": relation {} names itself as its parent", job.name, rel.table));
    }
    m_nodes[i + 1].parent = it->second;
    m_nodes[static_cast<size_t>(it->second)].children.push_back(static_cast<int>(i + 1));
  }
  // Kahn from the root: each node has one parent, so what the root does not reach lies on a cycle.
  std::deque<int> queue{0};
  while (!queue.empty()) {
    int n = queue.front();
    queue.pop_front();
    m_copy_order.push_back(n);
    for (int c : m_nodes[static_cast<size_t>(n)].children) {
      m_nodes[static_cast<size_t>(c)].depth = m_nodes[static_cast<size_t>(n)].depth + 1;
      queue.push_back(c);
    }
  }
  if (m_copy_order.size() != m_nodes.size()) {
    std::vector<std::string> cycle;
    std::vector<bool> seen(m_nodes.size(), false);
    for (int n : m_copy_order) seen[static_cast<size_t>(n)] = true;
    for (size_t i = 0; i < m_nodes.size(); ++i) {
      if (!seen[i]) cycle.push_back(m_nodes[i].table);
    }
    throw ConfigError(fmt::format("job \"{}\": the relations form a cycle that never reaches the root table {}: {}; "
                                  "every chain of parents must end at the root",
                                  job.name, job.root_table, join(cycle, " -> ")));
  }
}

int Tree::index_of(const std::string& table) const {
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    if (m_nodes[i].table == table) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Tree::delete_order() const { return {m_copy_order.rbegin(), m_copy_order.rend()}; }

std::string Tree::render() const {
  std::string out;
  auto describe = [&](const Node& n) {
    if (n.parent < 0) return n.table + " (root)";
    std::string refs = n.references.empty() ? "primary key" : join(n.references, ", ");
    return fmt::format("{} ({} -> {}.{})", n.table, join(n.foreign_key, ", "),
                       m_nodes[static_cast<size_t>(n.parent)].table, refs);
  };
  // Depth-first with box-drawing in ASCII.
  struct Frame {
    int node;
    std::string prefix;
    bool last;
  };
  std::vector<Frame> stack{{0, "", true}};
  bool first = true;
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    const Node& n = m_nodes[static_cast<size_t>(f.node)];
    if (first) {
      out += describe(n) + "\n";
      first = false;
    } else {
      out += f.prefix + (f.last ? "`-- " : "|-- ") + describe(n) + "\n";
    }
    std::string child_prefix = f.node == 0 ? "" : f.prefix + (f.last ? "    " : "|   ");
    for (size_t i = n.children.size(); i-- > 0;) {
      stack.push_back({n.children[i], child_prefix, i + 1 == n.children.size()});
    }
  }
  return out;
}

}  // namespace goarchive::plan

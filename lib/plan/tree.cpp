// Owns the relation graph of a job: building it from the relations (one node per table, several edges for a
// diamond), refusing what cannot be archived in order, the copy and delete orders, and its drawing.
#include "plan/tree.h"

#include <deque>
#include <map>

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace goarchive::plan {

const char* const k_diamond_rule =
    "a row with several parents in the job moves only when every such parent row moves in the same batch or is "
    "already archived; otherwise its root stays in the source, reported as blocked";

std::vector<Edge> Node::edges() const {
  std::vector<Edge> out;
  if (parent >= 0) out.push_back(Edge{parent, foreign_key, references});
  out.insert(out.end(), also.begin(), also.end());
  return out;
}

namespace {

const char* const k_order_reason =
    "a row's parent may be in another batch or may itself be archived later, so no copy order (parents first) and "
    "delete order (children first) holds for every row";

}  // namespace

Tree::Tree(const config::Job& job) {
  add_edges(job, add_nodes(job));
  order(job);
}

std::map<std::string, int> Tree::add_nodes(const config::Job& job) {
  m_nodes.push_back(Node{job.root_table, -1, {}, {}, {}, 0, {}, {}});
  std::map<std::string, int> index{{job.root_table, 0}};
  for (const auto& rel : job.relations) {
    if (rel.table == job.root_table) {
      throw ConfigError(fmt::format("job \"{}\": relation {} is the root table itself; the root cannot be under a "
                                    "parent in its own job ({}); remove that relation",
                                    job.name, rel.table, k_order_reason));
    }
    if (!index.count(rel.table)) {
      for (const auto& entry : index) {
        if (ascii_lower(entry.first) != ascii_lower(rel.table)) continue;
        throw ConfigError(fmt::format("job \"{}\": tables {} and {} differ only in letter case; on a server with "
                                      "lower_case_table_names = 1 or 2 they are one table, which the job would then "
                                      "copy and delete twice; spell the table the same way everywhere in the job",
                                      job.name, entry.first, rel.table));
      }
      index[rel.table] = static_cast<int>(m_nodes.size());
      m_nodes.push_back(Node{rel.table, -1, {}, {}, {}, 0, {}, {}});
    }
  }
  return index;
}

void Tree::add_edges(const config::Job& job, const std::map<std::string, int>& index) {
  std::vector<bool> has_primary(m_nodes.size(), false);
  for (const auto& rel : job.relations) {
    std::string parent = rel.parent.empty() ? job.root_table : rel.parent;
    int child = index.at(rel.table);
    Node& n = m_nodes[static_cast<size_t>(child)];
    if (parent == rel.table) {
      throw ConfigError(fmt::format("job \"{}\": relation {} names itself as its parent ({}.{} -> {}): goarchive "
                                    "refuses self-references, because {}; leave this relation out of the job",
                                    job.name, rel.table, rel.table, join(rel.foreign_key, ", "), rel.table,
                                    k_order_reason));
    }
    auto it = index.find(parent);
    if (it == index.end()) {
      throw ConfigError(fmt::format("job \"{}\": relation {} names parent {}, which is neither the root table {} nor "
                                    "another relation's table; add a relation for {} or fix the name",
                                    job.name, rel.table, parent, job.root_table, parent));
    }
    for (const auto& e : n.edges()) {
      if (e.parent == it->second && e.foreign_key == rel.foreign_key) {
        throw ConfigError(fmt::format("job \"{}\": table {} is listed twice under parent {} with foreign_key = ({}); "
                                      "remove one of the two relations",
                                      job.name, rel.table, parent, join(rel.foreign_key, ", ")));
      }
    }
    if (!has_primary[static_cast<size_t>(child)]) {
      has_primary[static_cast<size_t>(child)] = true;
      n.parent = it->second;
      n.foreign_key = rel.foreign_key;
      n.references = rel.references;
      m_nodes[static_cast<size_t>(it->second)].children.push_back(child);
    } else {
      n.also.push_back(Edge{it->second, rel.foreign_key, rel.references});
      m_nodes[static_cast<size_t>(it->second)].also_children.push_back(child);
    }
  }
}

void Tree::order(const config::Job& job) {
  // Kahn over every edge: a table comes after all of its parents; what never comes lies on a cycle.
  std::vector<std::vector<int>> out(m_nodes.size());
  std::vector<size_t> pending(m_nodes.size(), 0);
  for (size_t i = 1; i < m_nodes.size(); ++i) {
    for (const auto& e : m_nodes[i].edges()) {
      out[static_cast<size_t>(e.parent)].push_back(static_cast<int>(i));
      ++pending[i];
    }
  }
  std::deque<int> queue{0};
  while (!queue.empty()) {
    int n = queue.front();
    queue.pop_front();
    m_copy_order.push_back(n);
    for (int c : out[static_cast<size_t>(n)]) {
      Node& child = m_nodes[static_cast<size_t>(c)];
      child.depth = std::max(child.depth, m_nodes[static_cast<size_t>(n)].depth + 1);
      if (--pending[static_cast<size_t>(c)] == 0) queue.push_back(c);
    }
  }
  if (m_copy_order.size() != m_nodes.size()) {
    std::vector<std::string> cycle;
    std::vector<bool> seen(m_nodes.size(), false);
    for (int n : m_copy_order) seen[static_cast<size_t>(n)] = true;
    for (size_t i = 0; i < m_nodes.size(); ++i) {
      if (!seen[i]) cycle.push_back(m_nodes[i].table);
    }
    throw ConfigError(fmt::format("job \"{}\": the relations form a cycle (or hang below one) that never reaches the "
                                  "root table {}: {}; goarchive refuses cycles, because {}; every chain of parents "
                                  "must end at the root: remove a relation of the cycle",
                                  job.name, job.root_table, join(cycle, ", "), k_order_reason));
  }
}

int Tree::index_of(const std::string& table) const {
  for (size_t i = 0; i < m_nodes.size(); ++i) {
    if (m_nodes[i].table == table) return static_cast<int>(i);
  }
  return -1;
}

bool Tree::has_diamonds() const {
  for (const auto& n : m_nodes) {
    if (!n.also.empty()) return true;
  }
  return false;
}

std::vector<int> Tree::delete_order() const { return {m_copy_order.rbegin(), m_copy_order.rend()}; }

bool Tree::reaches(int node, int ancestor) const {
  if (node == ancestor) return true;
  for (const auto& e : m_nodes[static_cast<size_t>(node)].edges()) {
    if (reaches(e.parent, ancestor)) return true;
  }
  return false;
}

std::string Tree::render() const {
  std::string out;
  auto name = [&](int i) { return m_nodes[static_cast<size_t>(i)].table; };
  auto describe = [&](int i, const Edge* via) {
    const Node& n = m_nodes[static_cast<size_t>(i)];
    if (!via) return n.table + " (root)";
    std::string refs = via->references.empty() ? "primary key" : join(via->references, ", ");
    std::string line = fmt::format("{} ({} -> {}.{})", n.table, join(via->foreign_key, ", "), name(via->parent), refs);
    std::vector<std::string> others;
    for (const auto& e : n.edges()) {
      if (e.parent != via->parent || e.foreign_key != via->foreign_key) others.push_back(name(e.parent));
    }
    if (!others.empty()) line += " (also under " + join(others, ", ") + ")";
    if (via->parent != n.parent && (!n.children.empty() || !n.also_children.empty())) {
      line += " (its children are drawn under " + name(n.parent) + ")";
    }
    return line;
  };
  // Depth-first with box-drawing in ASCII; a further parent draws the child without its subtree.
  struct Frame {
    int node;
    Edge via;
    bool root, full;
    std::string prefix;
    bool last;
  };
  std::vector<Frame> stack{{0, Edge{}, true, true, "", true}};
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    const Node& n = m_nodes[static_cast<size_t>(f.node)];
    if (f.root) {
      out += describe(f.node, nullptr) + "\n";
    } else {
      out += f.prefix + (f.last ? "`-- " : "|-- ") + describe(f.node, &f.via) + "\n";
    }
    if (!f.full) continue;
    std::string child_prefix = f.root ? "" : f.prefix + (f.last ? "    " : "|   ");
    std::vector<Frame> kids;
    for (int c : n.children) {
      const Node& cn = m_nodes[static_cast<size_t>(c)];
      kids.push_back({c, Edge{f.node, cn.foreign_key, cn.references}, false, true, child_prefix, false});
    }
    for (int c : n.also_children) {
      for (const auto& e : m_nodes[static_cast<size_t>(c)].also) {
        if (e.parent == f.node) kids.push_back({c, e, false, false, child_prefix, false});
      }
    }
    if (!kids.empty()) kids.back().last = true;
    for (size_t i = kids.size(); i-- > 0;) stack.push_back(kids[i]);
  }
  return out;
}

std::string Tree::render_plan() const {
  std::vector<std::string> copy, del;
  for (int i : m_copy_order) copy.push_back(m_nodes[static_cast<size_t>(i)].table);
  for (int i : delete_order()) del.push_back(m_nodes[static_cast<size_t>(i)].table);
  std::string out = (has_diamonds() ? "graph:\n" : "tree:\n") + render() + "\n";
  out += "copy order (parents first):    " + join(copy, " -> ") + "\n";
  out += "delete order (children first): " + join(del, " -> ") + "\n";
  out += "restore, the other way:        copy into the source " + join(copy, " -> ") + ", remove from the archive " +
         join(del, " -> ") + "\n";
  if (has_diamonds()) out += std::string("rule: ") + k_diamond_rule + "\n";
  return out;
}

}  // namespace goarchive::plan

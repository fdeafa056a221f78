#pragma once
// The relation graph of a job, from the config alone: validated, ordered, printable. A tree in the common case;
// a table declared under several parents (a diamond: payment under rental and under customer) has one primary
// edge (its first relation in config order, the one the tree is drawn along) and further edges (`also`). The
// graph must be acyclic and every table must reach the root: a self-reference or a cycle cannot be archived in
// order (a row's parent may be in another batch, or may itself be archived later).
#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace goarchive::plan {

// One parent of a table: the relation's columns.
struct Edge {
  int parent = -1;                       // index into Tree::nodes()
  std::vector<std::string> foreign_key;  // columns of the child table
  std::vector<std::string> references;   // parent columns; empty = the parent's primary key
};

struct Node {
  std::string table;
  int parent = -1;                       // primary parent: index into Tree::nodes(); -1 for the root
  std::vector<std::string> foreign_key;  // columns of this table for the primary edge (empty for the root)
  std::vector<std::string> references;   // parent columns; empty = the parent's primary key
  std::vector<int> children;             // nodes whose primary parent this is
  int depth = 0;                         // the longest chain of parents down to the root
  std::vector<Edge> also;                // further parents inside the job (a diamond), in config order
  std::vector<int> also_children;        // nodes that have this one as a further parent

  // Every edge of this node, the primary one first.
  std::vector<Edge> edges() const;
};

class Tree {
public:
  // Throws ConfigError for a cycle, a self-reference, an unknown parent, the root under a parent or a relation
  // listed twice.
  explicit Tree(const config::Job& job);

  const std::vector<Node>& nodes() const { return m_nodes; }
  const Node& root() const { return m_nodes[0]; }
  int index_of(const std::string& table) const;  // -1 if absent
  // True when some table has more than one parent in the job.
  bool has_diamonds() const;
  // Topological (Kahn, breadth-first) order of node indexes: every table after all of its parents. The copy order.
  const std::vector<int>& copy_order() const { return m_copy_order; }
  // Every table before all of its parents: the reverse of the copy order. The delete order.
  std::vector<int> delete_order() const;
  // True when `ancestor` is reachable from `node` by following parents (a node is its own ancestor).
  bool reaches(int node, int ancestor) const;
  // The graph drawn with ASCII branches, one table a line, with its join columns; a table with several parents is
  // drawn under each, marked "(also under ...)", its children under its primary parent only.
  std::string render() const;
  // What `plan` and `dry-run` print: the drawing, the copy and delete orders and, with diamonds, the rule.
  std::string render_plan() const;

private:
  // One node per table, the root first, then the relations' tables in config order; returns table -> node.
  std::map<std::string, int> add_nodes(const config::Job& job);
  // Each relation's edge: the first one of a table is its primary edge, the others further ones (`also`).
  void add_edges(const config::Job& job, const std::map<std::string, int>& index);
  // The copy order and the depths (Kahn over every edge); throws when some table never comes (a cycle).
  void order(const config::Job& job);

  std::vector<Node> m_nodes;
  std::vector<int> m_copy_order;
};

// The rule for rows with several parents, in one line (plan, dry-run, the man page).
extern const char* const k_diamond_rule;

}  // namespace goarchive::plan

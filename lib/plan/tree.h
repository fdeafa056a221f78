#pragma once
// The relation tree of a job, from the config alone: validated, ordered, printable.
#include <string>
#include <vector>

#include "config/config.h"

namespace goarchive::plan {

struct Node {
  std::string table;
  int parent = -1;                       // index into Tree::nodes(); -1 for the root
  std::vector<std::string> foreign_key;  // columns of this table (empty for the root)
  std::vector<std::string> references;   // parent columns; empty = the parent's primary key
  std::vector<int> children;
  int depth = 0;
};

class Tree {
public:
  // Throws ConfigError for a cycle, an unknown parent or a table listed twice.
  explicit Tree(const config::Job& job);

  const std::vector<Node>& nodes() const { return m_nodes; }
  const Node& root() const { return m_nodes[0]; }
  int index_of(const std::string& table) const;  // -1 if absent
  // Parent-first (Kahn, breadth-first) order of node indexes: the copy order.
  const std::vector<int>& copy_order() const { return m_copy_order; }
  // Child-first: the reverse of the copy order.
  std::vector<int> delete_order() const;
  // The tree drawn with ASCII branches, one table a line, with its join columns.
  std::string render() const;

private:
  std::vector<Node> m_nodes;
  std::vector<int> m_copy_order;
};

}  // namespace goarchive::plan

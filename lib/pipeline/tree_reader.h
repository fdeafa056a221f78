#pragma once
// Reads a batch's tree from either server: root rows by keyset or by exact key, then every child table
// in topological order by chunked IN lists over its parents' referenced values, each row tagged with its root
// (a table with several parents is read through each and merged by primary key).
// It only reads (plain, or FOR UPDATE inside the caller's transaction); it never writes and never commits.
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/context.h"

namespace goarchive::pipeline {

enum class Side { source, destination };
// How the rows are read: plainly (a snapshot or a plain read), or locked for the delete.
enum class Read { plain, locked };

class TreeReader {
public:
  explicit TreeReader(const Context& ctx) : m_ctx(ctx) {}

  // `SELECT <columns> ... WHERE (<where>) AND key > <after> ORDER BY key LIMIT n`: the next roots, n as
  // Context::batch_roots says.
  std::string keyset_query(const std::vector<std::string>* after, const std::string& columns) const;
  // `SELECT EXISTS (SELECT 1 ... WHERE (<where>))`, with no index hint: whether any root matches, which the
  // optimizer answers by the `where` column's index where there is one (the keyset walk by the primary key reads
  // every row of the table when none matches).
  std::string any_root_query() const;
  // The root rows of `batch.root_keys` by exact key, into batch.tables[0]. With `matches`, also whether each
  // row still matches `where` (evaluated by the server in the same statement, so under the same lock).
  void read_roots(db::Connection& conn, Side side, Batch& batch, Read read, std::vector<bool>* matches = nullptr) const;
  // Every child table, parent-first, from the parent rows already in the batch.
  void read_children(db::Connection& conn, Side side, Batch& batch, Read read) const;

private:
  std::string root_condition() const;  // (<where>) [AND the partition path's exclusion]
  void read_child(db::Connection& conn, Side side, Batch& batch, size_t t, Read read) const;
  // The rows of table `m` under the batch's rows of one of its parents, each with that parent row's root.
  void read_edge(db::Connection& conn, Side side, const Batch& batch, const TableMeta& m, const EdgeMeta& e, Read read,
                 db::RowSet& out, std::vector<int>& owner) const;
  const Context& m_ctx;
};

}  // namespace goarchive::pipeline

#pragma once
// One table of a job's tree with everything its SQL needs: names on both servers, data columns, key and
// foreign-key positions. Built once per run from the source catalog (after preflight); never changed after.
#include <string>
#include <vector>

#include "config/config.h"
#include "plan/tree.h"
#include "schema/catalog.h"

namespace goarchive::pipeline {

// One parent of a table inside the job, with the positions its SQL needs.
struct EdgeMeta {
  int parent = -1;                     // node index
  std::vector<std::string> foreign_key;
  std::vector<size_t> fk_idx;          // this table's foreign-key columns
  std::vector<size_t> parent_ref_idx;  // the referenced columns, positions in the parent's `columns`
  std::vector<bool> fk_binary;         // per foreign-key column: either side binary
  std::vector<bool> fk_integer;        // per foreign-key column: both sides integer columns
  std::vector<std::string> fk_wrap;    // see TableMeta::fk_wrap
  bool collated_fk = false;            // see TableMeta::collated_fk
  bool config_only = false;            // see TableMeta::config_only
};

// A foreign key from a table outside the job into this one (RESTRICT / NO ACTION: preflight refuses the others).
struct OutsideRef {
  schema::ForeignKey fk;
  std::string source_name;         // `db`.`table` of the referencing table
  std::vector<size_t> ref_idx;     // the referenced columns, positions in this table's `columns`
  std::vector<bool> binary;        // per referenced column
};

struct TableMeta {
  plan::Node node;
  schema::TableInfo source;
  std::string source_name;       // `db`.`table` on the source
  std::string destination_name;  // `db`.`table` on the destination
  std::vector<std::string> columns;   // data columns (stored, not generated), in order
  std::vector<bool> binary;           // per data column
  std::vector<bool> integer;          // per data column: TINYINT .. BIGINT (whole numbers, one text per value)
  std::vector<size_t> key_idx;        // primary key columns, positions in `columns`
  std::vector<std::string> key_cols;  // primary key column names
  std::vector<bool> key_binary;       // per key column
  std::vector<bool> key_integer;      // per key column: an integer column
  std::vector<size_t> fk_idx;         // this table's foreign-key columns (children)
  std::vector<size_t> parent_ref_idx; // the referenced columns, positions in the parent's `columns`
  std::vector<bool> fk_binary;        // per foreign-key column: either side binary
  std::vector<bool> fk_integer;       // per foreign-key column: both sides integer columns
  // Per key / foreign-key column of a key of two or more columns: the column's collation when it is text in a
  // character set other than UTF-8, else "". MariaDB 10.11 finds no non-ASCII row of such a column through a row
  // IN list of two or more tuples of utf8mb4 literals ((a, b) IN (('é', 1), ('é', 2)) matches nothing in a latin1,
  // sjis or gbk column); a literal converted to the column's own character set and collation is found.
  std::vector<std::string> key_wrap, fk_wrap;
  std::vector<bool> single_float;     // per data column: FLOAT (read as DOUBLE, see `select_list`)
  // Per data column: a text column in a character set other than UTF-8 that identifies no row: read as
  // CAST(col AS BINARY) and sent as bytes (`binary` is set too), so that a byte with no Unicode character
  // survives. LOAD DATA, which converts from its CHARACTER SET, is not used for a table that has one.
  std::vector<bool> raw_text;
  // Per data column: an ENUM with a '' member that identifies no row, read as its index (`col + 0`): see
  // enum_by_index in table_meta.cpp.
  std::vector<bool> enum_index;
  bool has_raw_text = false;
  // The read expression of each data column, in order: the quoted column, or CAST(col AS DOUBLE) for a FLOAT,
  // whose text form in results has 6 significant digits (16777216 reads as 16777200) while every FLOAT is a
  // DOUBLE exactly and a DOUBLE's text is its shortest round-trip form (mariadb-facts C9). Every read of
  // rows (source, destination, RETURNING) uses it, so no comparison passes on two equally lossy texts.
  std::string select_list;
  std::string insert_list;            // quoted column list, for INSERT and LOAD DATA
  // A foreign-key column compares by collation ('abc' = 'ABC ' under a _ci, PAD SPACE collation): children are
  // then matched to their parent row by the server, through a join that returns the parent's exact key bytes.
  bool collated_fk = false;
  // The relation is declared only in the config (no foreign key in the source database): nothing makes an
  // application's insert of a child wait for the delete of its parent, so the delete's read takes gap locks.
  bool config_only = false;
  // Every parent in the job, the primary one (the fields above) first; more than one for a diamond.
  std::vector<EdgeMeta> edges;
  // Foreign keys from tables outside the job into this one: a row they still reference stays (its root blocked).
  std::vector<OutsideRef> outside;
};

// The read expression of m's data column c (see TableMeta::select_list), prefixed by `alias.` when given.
std::string read_expression(const TableMeta& m, size_t c, const std::string& alias);
// The read expressions of m's data columns (see TableMeta::select_list), each column prefixed by `alias.` when
// given.
std::string read_list(const TableMeta& m, const std::string& alias);

// Builds the table metadata of a job from the source catalog (preflight has already checked it).
std::vector<TableMeta> describe(const plan::Tree& tree, const std::vector<schema::TableInfo>& source_tables,
                                const config::Job& job, const std::string& source_db, const std::string& dest_db);

// The same tables with their two ends swapped, for restore: `source_name` names the archive table read and
// emptied, `destination_name` the source table written. No table outside the job references the archive.
std::vector<TableMeta> reversed(std::vector<TableMeta> tables);

}  // namespace goarchive::pipeline

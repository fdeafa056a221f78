#include "pipeline/table_meta.h"

#include <set>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

size_t position(const std::vector<std::string>& columns, const std::string& col) {
  for (size_t k = 0; k < columns.size(); ++k) {
    if (ascii_lower(columns[k]) == ascii_lower(col)) return k;
  }
  return columns.size();
}

// True when the source declares a foreign key from `child` to `parent` over the relation's columns.
bool declared_in_database(const TableMeta& child, const std::string& parent_table,
                          const std::vector<std::string>& foreign_key) {
  for (const auto& fk : child.source.references) {
    if (ascii_lower(fk.ref_table) == ascii_lower(parent_table) && same_names(fk.columns, foreign_key)) {
      return true;
    }
  }
  return false;
}

// A text column in a character set other than UTF-8: its values reach a utf8mb4 session converted, and a byte
// with no Unicode character (0x98 in cp1251, a lone surrogate in ucs2, a byte over 127 stored in ascii) arrives
// as '?'. Its bytes travel unconverted instead.
bool raw_text(const schema::Column& c) {
  static const std::set<std::string> text = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"};
  if (c.binary || !text.count(c.data_type) || c.collation.empty()) return false;
  const std::string charset = c.collation.substr(0, c.collation.find('_'));
  return charset != "utf8mb4" && charset != "utf8mb3" && charset != "utf8";
}

// The members of an ENUM or SET column_type: "enum('','x','it''s')" -> {"", "x", "it's"}.
std::vector<std::string> members(const std::string& column_type) {
  std::vector<std::string> out;
  size_t i = column_type.find('(');
  while (i != std::string::npos && i < column_type.size()) {
    size_t q = column_type.find('\'', i);
    if (q == std::string::npos) break;
    std::string m;
    size_t k = q + 1;
    for (; k < column_type.size(); ++k) {
      if (column_type[k] == '\\' && k + 1 < column_type.size()) {
        m += column_type[++k];
      } else if (column_type[k] == '\'') {
        if (k + 1 < column_type.size() && column_type[k + 1] == '\'') {
          m += '\'';
          ++k;
        } else {
          break;
        }
      } else {
        m += column_type[k];
      }
    }
    out.push_back(std::move(m));
    i = k + 1;
  }
  return out;
}

// An ENUM whose members include '' cannot tell, as text, its '' member from the invalid value (index 0) a
// non-strict insert stores: both read ''. Its index (col + 0) tells them apart, and a digit string goes back in as
// that index, unless a member's name is itself a number (then the name would win): such a column keeps its text.
// The collation to convert a key literal to (TableMeta::key_wrap): a text column in a charset other than UTF-8.
std::string wrap_collation(const schema::Column* c, size_t key_columns) {
  if (!c || key_columns < 2 || c->binary || c->collation.empty()) return "";
  const std::string charset = c->collation.substr(0, c->collation.find('_'));
  if (charset == "utf8mb4" || charset == "utf8mb3" || charset == "utf8" || charset == "binary") return "";
  return c->collation;
}

bool enum_by_index(const schema::Column& c) {
  if (c.data_type != "enum") return false;
  auto ms = members(c.column_type);
  bool empty = false;
  for (const auto& m : ms) {
    if (m.empty()) empty = true;
    else if (m.find_first_not_of("0123456789 ") == std::string::npos) return false;
  }
  return empty;
}

TableMeta describe_one(const plan::Node& node, const schema::TableInfo& info, const config::Job& job, bool is_root,
                       const std::string& source_db, const std::string& dest_db) {
  TableMeta m;
  m.node = node;
  m.source = info;
  m.source_name = sql::qualified(source_db, node.table);
  m.destination_name = sql::qualified(dest_db, node.table);
  for (const auto& c : info.columns) {
    if (c.generated) continue;
    m.columns.push_back(c.name);
    m.binary.push_back(c.binary);
    m.single_float.push_back(c.data_type == "float");
    m.raw_text.push_back(raw_text(c));
    m.enum_index.push_back(enum_by_index(c));
    m.integer.push_back(c.data_type == "tinyint" || c.data_type == "smallint" || c.data_type == "mediumint" ||
                        c.data_type == "int" || c.data_type == "bigint");
  }
  auto pos = [&](const std::string& col) -> size_t {
    size_t k = position(m.columns, col);
    if (k == m.columns.size()) {
      throw PreflightError(fmt::format("column {} of table {} is missing or generated", col, node.table));
    }
    return k;
  };
  m.key_cols = is_root && !job.primary_key.empty() ? job.primary_key : info.primary_key;
  for (const auto& k : m.key_cols) {
    m.key_idx.push_back(pos(k));
    m.key_binary.push_back(m.binary[m.key_idx.back()]);
    m.key_integer.push_back(m.integer[m.key_idx.back()]);
    m.key_wrap.push_back(wrap_collation(info.column(k), m.key_cols.size()));
  }
  for (const auto& e : node.edges()) {
    EdgeMeta em;
    em.parent = e.parent;
    em.foreign_key = e.foreign_key;
    for (const auto& f : e.foreign_key) {
      em.fk_idx.push_back(pos(f));
      if (const schema::Column* col = info.column(f); col && !col->collation.empty()) em.collated_fk = true;
    }
    m.edges.push_back(std::move(em));
  }
  // A column that identifies rows (a key, a foreign key, a unique key a child may reference) compares by its
  // collation in the server's SQL: it keeps its text form.
  std::vector<std::string> identifying = m.key_cols;
  for (const auto& e : node.edges()) identifying.insert(identifying.end(), e.foreign_key.begin(), e.foreign_key.end());
  for (const auto& u : info.unique_keys) identifying.insert(identifying.end(), u.begin(), u.end());
  for (const auto& col : identifying) {
    if (size_t k = position(m.columns, col); k < m.columns.size()) m.raw_text[k] = m.enum_index[k] = false;
  }
  for (size_t c = 0; c < m.columns.size(); ++c) {
    if (!m.raw_text[c]) continue;
    m.binary[c] = true;  // sent as bytes: a binary string goes into the column unconverted
    m.has_raw_text = true;
  }
  m.select_list = read_list(m, "");
  m.insert_list = sql::ident_list(m.columns);
  return m;
}

}  // namespace

std::string read_expression(const TableMeta& m, size_t c, const std::string& alias) {
  const std::string col = (alias.empty() ? "" : alias + ".") + sql::ident(m.columns[c]);
  if (m.single_float[c]) return "CAST(" + col + " AS DOUBLE)";
  if (m.raw_text[c]) return "CAST(" + col + " AS BINARY)";
  if (m.enum_index[c]) return "(" + col + " + 0)";
  return col;
}

std::string read_list(const TableMeta& m, const std::string& alias) {
  std::string out;
  for (size_t c = 0; c < m.columns.size(); ++c) out += (c ? ", " : "") + read_expression(m, c, alias);
  return out;
}

std::vector<TableMeta> describe(const plan::Tree& tree, const std::vector<schema::TableInfo>& source_tables,
                                const config::Job& job, const std::string& source_db, const std::string& dest_db) {
  std::vector<TableMeta> out;
  for (size_t i = 0; i < tree.nodes().size(); ++i) {
    out.push_back(describe_one(tree.nodes()[i], source_tables[i], job, i == 0, source_db, dest_db));
  }
  // Referenced columns are positions in the parent's column list.
  for (size_t i = 1; i < out.size(); ++i) {
    TableMeta& child = out[i];
    std::vector<plan::Edge> edges = child.node.edges();
    for (size_t e = 0; e < edges.size(); ++e) {
      EdgeMeta& em = child.edges[e];
      const TableMeta& parent = out[static_cast<size_t>(em.parent)];
      std::vector<std::string> refs = edges[e].references.empty() ? parent.key_cols : edges[e].references;
      for (size_t k = 0; k < refs.size(); ++k) {
        size_t p = position(parent.columns, refs[k]);
        if (p == parent.columns.size()) {
          throw PreflightError(fmt::format("column {} of table {} (referenced by {}) is missing", refs[k],
                                           parent.node.table, child.node.table));
        }
        em.parent_ref_idx.push_back(p);
        em.fk_binary.push_back(child.binary[em.fk_idx[k]] || parent.binary[p]);
        em.fk_integer.push_back(child.integer[em.fk_idx[k]] && parent.integer[p]);
        em.fk_wrap.push_back(wrap_collation(child.source.column(em.foreign_key[k]), refs.size()));
      }
      em.config_only = !declared_in_database(child, parent.node.table, em.foreign_key);
    }
    const EdgeMeta& primary = child.edges.front();
    child.fk_idx = primary.fk_idx;
    child.parent_ref_idx = primary.parent_ref_idx;
    child.fk_binary = primary.fk_binary;
    child.fk_integer = primary.fk_integer;
    child.fk_wrap = primary.fk_wrap;
    child.collated_fk = primary.collated_fk;
    child.config_only = primary.config_only;
  }
  // Foreign keys into the job from tables outside it.
  for (auto& m : out) {
    for (const auto& fk : m.source.referenced_by) {
      bool in_job = false;
      for (const auto& n : tree.nodes()) in_job = in_job || ascii_lower(n.table) == ascii_lower(fk.table);
      if (in_job && ascii_lower(fk.database) == ascii_lower(source_db)) continue;
      OutsideRef ref;
      ref.fk = fk;
      ref.source_name = sql::qualified(fk.database, fk.table);
      for (const auto& c : fk.ref_columns) {
        size_t p = position(m.columns, c);
        if (p == m.columns.size()) {
          throw PreflightError(fmt::format("column {} of table {} (referenced by {}.{}) is missing or generated", c,
                                           m.node.table, fk.table, fk.name));
        }
        ref.ref_idx.push_back(p);
        ref.binary.push_back(m.binary[p]);
      }
      m.outside.push_back(std::move(ref));
    }
  }
  return out;
}

std::vector<TableMeta> reversed(std::vector<TableMeta> tables) {
  for (auto& t : tables) {
    std::swap(t.source_name, t.destination_name);
    t.outside.clear();
  }
  return tables;
}

}  // namespace goarchive::pipeline

#include "plan/ddl.h"

#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "plan/sql.h"
#include "util/error.h"
#include "util/strings.h"

namespace goarchive::plan {

namespace {

// SHOW CREATE TABLE is read as tokens so that nothing inside a string, a quoted identifier or a comment is ever
// taken for structure: a comma in an ENUM value or a COMMENT, "FOREIGN KEY" in a default, a backtick in a name.
enum class Kind { space, word, ident, string, comment, punct };

struct Token {
  Kind kind;
  size_t begin, end;  // the token's bytes in the statement
  std::string value;  // word: upper case; ident: unescaped name; punct: the character; else empty
};

[[noreturn]] void unparsable(std::string_view why) {
  throw Error(fmt::format("cannot read the source's SHOW CREATE TABLE output: {}; create the destination table by hand "
                          "from SHOW CREATE TABLE on the source",
                          why));
}

bool word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c)) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      out.push_back({Kind::space, start, i, ""});
    } else if (c == '`') {
      std::string name;
      for (++i;; ++i) {
        if (i >= s.size()) unparsable("an identifier is not closed");
        if (s[i] == '`') {
          if (i + 1 < s.size() && s[i + 1] == '`') {
            name += '`';
            ++i;
            continue;
          }
          break;
        }
        name += s[i];
      }
      ++i;
      out.push_back({Kind::ident, start, i, std::move(name)});
    } else if (c == '\'' || c == '"') {
      // Quotes doubled or backslash-escaped (goarchive's sessions never set NO_BACKSLASH_ESCAPES).
      for (++i;; ++i) {
        if (i >= s.size()) unparsable("a string is not closed");
        if (s[i] == '\\') {
          ++i;
          continue;
        }
        if (s[i] == static_cast<char>(c)) {
          if (i + 1 < s.size() && s[i + 1] == static_cast<char>(c)) {
            ++i;
            continue;
          }
          break;
        }
      }
      ++i;
      out.push_back({Kind::string, start, i, ""});
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t close = s.find("*/", i + 2);
      if (close == std::string_view::npos) unparsable("a comment is not closed");
      i = close + 2;
      out.push_back({Kind::comment, start, i, ""});
    } else if (word_char(c)) {
      while (i < s.size() && word_char(static_cast<unsigned char>(s[i]))) ++i;
      std::string w(s.substr(start, i - start));
      for (auto& ch : w) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out.push_back({Kind::word, start, i, std::move(w)});
    } else {
      ++i;
      out.push_back({Kind::punct, start, i, std::string(1, static_cast<char>(c))});
    }
  }
  return out;
}

class Statement {
public:
  explicit Statement(std::string_view text) : m_text(text), m_tokens(lex(text)) {}

  const Token& at(size_t i) const { return m_tokens[i]; }
  size_t size() const { return m_tokens.size(); }
  std::string_view text(size_t i) const {
    return m_text.substr(m_tokens[i].begin, m_tokens[i].end - m_tokens[i].begin);
  }

  // The first token at or after i that is not white space or a comment; size() if none before `end`.
  size_t next(size_t i, size_t end) const {
    while (i < end && (m_tokens[i].kind == Kind::space || m_tokens[i].kind == Kind::comment)) ++i;
    return i;
  }
  bool is_word(size_t i, size_t end, std::string_view w) const {
    return i < end && m_tokens[i].kind == Kind::word && m_tokens[i].value == w;
  }
  bool is_punct(size_t i, size_t end, char p) const {
    return i < end && m_tokens[i].kind == Kind::punct && m_tokens[i].value[0] == p;
  }
  // The index of the ')' that closes the '(' at i.
  size_t closing(size_t i, size_t end) const {
    int depth = 0;
    for (; i < end; ++i) {
      if (is_punct(i, end, '(')) ++depth;
      if (is_punct(i, end, ')') && --depth == 0) return i;
    }
    unparsable("parentheses do not balance");
  }
  // Names of a parenthesized identifier list starting at the '(' at i; `after` is set past the ')'.
  std::vector<std::string> ident_list(size_t i, size_t end, size_t& after) const {
    if (!is_punct(i, end, '(')) unparsable("a column list is missing");
    size_t close = closing(i, end);
    std::vector<std::string> names;
    for (size_t k = i + 1; k < close; ++k) {
      if (m_tokens[k].kind == Kind::ident) names.push_back(m_tokens[k].value);
    }
    after = close + 1;
    return names;
  }

private:
  std::string_view m_text;
  std::vector<Token> m_tokens;
};

// Renders tokens [begin, end) with some left out and some replaced; drops the white space before a left-out token.
class Edit {
public:
  Edit(const Statement& st, size_t begin, size_t end) : m_st(st), m_begin(begin), m_end(end) {}
  void remove(size_t from, size_t to) {  // [from, to)
    for (size_t i = from; i < to; ++i) m_removed.insert(i);
    if (from > m_begin && m_st.at(from - 1).kind == Kind::space) m_removed.insert(from - 1);
  }
  void replace(size_t from, size_t to, std::string text) {
    m_replaced[from] = std::move(text);
    for (size_t i = from + 1; i < to; ++i) m_removed.insert(i);
  }
  std::string str() const {
    std::string out;
    for (size_t i = m_begin; i < m_end; ++i) {
      if (auto it = m_replaced.find(i); it != m_replaced.end()) out += it->second;
      else if (!m_removed.count(i)) out += m_st.text(i);
    }
    return trim(out);
  }

private:
  const Statement& m_st;
  size_t m_begin, m_end;
  std::set<size_t> m_removed;
  std::map<size_t, std::string> m_replaced;
};

// Comment lines must stay one line each.
std::string one_line(std::string s) {
  for (auto& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

class Rewriter {
public:
  Rewriter(std::string_view text, const DdlRewrite& rw) : m_st(text), m_rw(rw) {}

  DestinationDdl run() {
    size_t n = m_st.size();
    size_t i = m_st.next(0, n);
    if (!m_st.is_word(i, n, "CREATE")) unparsable("it does not start with CREATE TABLE");
    i = m_st.next(i + 1, n);
    if (m_st.is_word(i, n, "TEMPORARY")) i = m_st.next(i + 1, n);
    if (!m_st.is_word(i, n, "TABLE")) unparsable("it does not start with CREATE TABLE");
    i = m_st.next(i + 1, n);
    if (i >= n || m_st.at(i).kind != Kind::ident) unparsable("no quoted table name after CREATE TABLE");
    m_out.table = m_st.at(i).value;
    i = m_st.next(i + 1, n);
    if (m_st.is_punct(i, n, '.')) {  // never printed by the server, but harmless: the last name is the table
      i = m_st.next(i + 1, n);
      if (i >= n || m_st.at(i).kind != Kind::ident) unparsable("no table name after the database name");
      m_out.table = m_st.at(i).value;
      i = m_st.next(i + 1, n);
    }
    if (!m_st.is_punct(i, n, '(')) unparsable("no '(' after the table name");
    size_t close = m_st.closing(i, n);
    std::vector<std::string> elements;
    size_t start = i + 1;
    int depth = 0;
    for (size_t k = i + 1; k <= close; ++k) {
      if (m_st.is_punct(k, n, '(')) ++depth;
      else if (m_st.is_punct(k, n, ')')) --depth;
      if ((depth == 0 && m_st.is_punct(k, n, ',')) || k == close) {
        if (auto e = element(start, k); !e.empty()) elements.push_back(std::move(e));
        start = k + 1;
      }
    }
    if (elements.empty()) unparsable("the table has no columns");
    m_out.sql = fmt::format("CREATE TABLE {} (\n  {}\n)", sql::qualified(m_rw.destination_database, m_out.table),
                            join(elements, ",\n  "));
    if (std::string options = table_options(close + 1, n); !options.empty()) m_out.sql += " " + options;
    return std::move(m_out);
  }

private:
  // One column, key or constraint of the table, as it goes to the destination ("" when left out).
  std::string element(size_t begin, size_t end) {
    size_t i = m_st.next(begin, end);
    if (i >= end) return "";
    Edit edit(m_st, begin, end);
    if (m_st.at(i).kind == Kind::ident) {
      column(edit, m_st.at(i).value, i + 1, end);
      return edit.str();
    }
    std::string name;
    size_t k = i;
    if (m_st.is_word(k, end, "CONSTRAINT")) {
      k = m_st.next(k + 1, end);
      if (k < end && m_st.at(k).kind == Kind::ident) {
        name = m_st.at(k).value;
        k = m_st.next(k + 1, end);
      }
    }
    if (m_st.is_word(k, end, "FOREIGN")) return foreign_key(edit, name, k, end) ? edit.str() : "";
    if (m_st.is_word(k, end, "UNIQUE")) unique_key(edit, k, end);
    return edit.str();  // a key, an index, a CHECK constraint, a PERIOD: as on the source
  }

  // An archive accumulates history: a value the source frees and reuses (an e-mail address, an order number) is
  // archived again later, beside the old row. A secondary UNIQUE key would refuse that row on every run, so it
  // becomes a plain index (the primary key stays the only unique one).
  void unique_key(Edit& edit, size_t k, size_t end) {
    size_t n = m_st.next(k + 1, end);
    std::string key = "UNIQUE";
    if (m_st.is_word(n, end, "KEY") || m_st.is_word(n, end, "INDEX")) {
      size_t id = m_st.next(n + 1, end);
      if (id < end && m_st.at(id).kind == Kind::ident) key = m_st.at(id).value;
      edit.remove(k, k + 1);
    } else {
      edit.replace(k, k + 1, "KEY");
    }
    m_out.dropped.push_back(one_line(fmt::format(
        "the uniqueness of key {} (kept as a plain index): an archive keeps a value the source reuses", key)));
  }

  // The archive copies ids and never generates them: the column keeps its type, loses AUTO_INCREMENT.
  void column(Edit& edit, const std::string& name, size_t begin, size_t end) {
    int depth = 0;
    for (size_t k = begin; k < end; ++k) {
      if (m_st.is_punct(k, end, '(')) ++depth;
      else if (m_st.is_punct(k, end, ')')) --depth;
      else if (depth == 0 && m_st.is_word(k, end, "AUTO_INCREMENT")) {
        edit.remove(k, k + 1);
        m_out.dropped.push_back(one_line(fmt::format("the AUTO_INCREMENT attribute of column {}", name)));
      }
    }
  }

  // Keeps the key (with REFERENCES re-qualified) when it is the job's relation to this table's parent.
  bool foreign_key(Edit& edit, const std::string& name, size_t k, size_t end) {
    k = m_st.next(k + 1, end);
    if (!m_st.is_word(k, end, "KEY")) unparsable("FOREIGN without KEY");
    k = m_st.next(k + 1, end);
    if (k < end && m_st.at(k).kind == Kind::ident) k = m_st.next(k + 1, end);  // an index name
    size_t after = 0;
    std::vector<std::string> columns = m_st.ident_list(k, end, after);
    k = m_st.next(after, end);
    if (!m_st.is_word(k, end, "REFERENCES")) unparsable("FOREIGN KEY without REFERENCES");
    size_t ref_begin = m_st.next(k + 1, end);
    if (ref_begin >= end || m_st.at(ref_begin).kind != Kind::ident) unparsable("no table name after REFERENCES");
    std::string ref_db, ref_table = m_st.at(ref_begin).value;
    size_t ref_end = ref_begin + 1;
    if (size_t dot = m_st.next(ref_end, end); m_st.is_punct(dot, end, '.')) {
      size_t t = m_st.next(dot + 1, end);
      if (t >= end || m_st.at(t).kind != Kind::ident) unparsable("no table name after REFERENCES db.");
      ref_db = ref_table;
      ref_table = m_st.at(t).value;
      ref_end = t + 1;
    }
    std::string label = fmt::format("foreign key {}({}) references {}", name.empty() ? "" : name + " ",
                                    join(columns, ", "), ref_db.empty() ? ref_table : ref_db + "." + ref_table);
    std::string why;
    bool other_db = !ref_db.empty() && ascii_lower(ref_db) != ascii_lower(m_rw.source_database);
    bool is_parent = m_rw.parent && ascii_lower(ref_table) == ascii_lower(m_rw.parent->table);
    if (other_db) {
      why = "a table in another database";
    } else if (!m_rw.foreign_key_checks) {
      why = "[destination] foreign_key_checks = false";
    } else if (is_parent && same_columns(columns, m_rw.parent->columns)) {
      edit.replace(ref_begin, ref_end, sql::qualified(m_rw.destination_database, ref_table));
      return true;
    } else if (is_parent) {
      why = fmt::format("the job's relation to {} uses foreign_key = ({})", ref_table,
                        join(m_rw.parent->columns, ", "));
    } else if (in_job(ref_table)) {
      why = m_rw.parent
                ? fmt::format("a table of the job, but not this table's parent {} in the tree", m_rw.parent->table)
                : std::string("a table of the job, but this is the root table");
    } else {
      why = "not a table of the job";
    }
    m_out.dropped.push_back(one_line(label + ": " + why));
    return false;
  }

  bool in_job(const std::string& table) const {
    for (const auto& t : m_rw.job_tables) {
      if (ascii_lower(t) == ascii_lower(table)) return true;
    }
    return false;
  }

  // Table options after the closing parenthesis, without the ones that would surprise on an archive server.
  std::string table_options(size_t begin, size_t end) {
    Edit edit(m_st, begin, end);
    // `NAME [=] value`: the index past the value.
    auto option_end = [&](size_t k) {
      size_t v = m_st.next(k + 1, end);
      if (m_st.is_punct(v, end, '=')) v = m_st.next(v + 1, end);
      return v < end ? v + 1 : end;
    };
    for (size_t k = begin; k < end; ++k) {
      const Token& t = m_st.at(k);
      if (t.kind == Kind::comment) {
        // MySQL writes partitioning and general tablespaces as version comments: /*!50100 PARTITION BY ... */.
        std::string body = ascii_lower(m_st.text(k));
        size_t p = body.find_first_not_of("/*!0123456789 \t\r\n");
        if (p == std::string::npos) continue;
        if (body.compare(p, 9, "partition") == 0) {
          edit.remove(k, k + 1);
          m_out.dropped.push_back("the partitioning clause (PARTITION BY ...)");
        } else if (body.compare(p, 10, "tablespace") == 0) {
          edit.remove(k, k + 1);
          m_out.dropped.push_back("the table option TABLESPACE (it may not exist on the destination)");
        }
        continue;
      }
      if (t.kind != Kind::word) continue;
      if (t.value == "AUTO_INCREMENT") {
        size_t e = option_end(k);
        m_out.dropped.push_back(one_line(fmt::format("the table option AUTO_INCREMENT={}", m_st.text(e - 1))));
        edit.remove(k, e);
        k = e - 1;
      } else if ((t.value == "DATA" || t.value == "INDEX") && m_st.is_word(m_st.next(k + 1, end), end, "DIRECTORY")) {
        size_t e = option_end(m_st.next(k + 1, end));
        m_out.dropped.push_back(fmt::format("the table option {} DIRECTORY (a path on the source's host)", t.value));
        edit.remove(k, e);
        k = e - 1;
      } else if (t.value == "TABLESPACE") {
        size_t e = option_end(k);
        m_out.dropped.push_back("the table option TABLESPACE (it may not exist on the destination)");
        edit.remove(k, e);
        k = e - 1;
      } else if (t.value == "PARTITION" && m_st.is_word(m_st.next(k + 1, end), end, "BY")) {
        // Everything from PARTITION BY on is the partitioning clause: the archive is one plain table.
        m_out.dropped.push_back("the partitioning clause (PARTITION BY ...)");
        edit.remove(k, end);
        break;
      }
    }
    return edit.str();
  }

  Statement m_st;
  const DdlRewrite& m_rw;
  DestinationDdl m_out;
};

bool plain_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

DestinationDdl destination_ddl(std::string_view show_create, const DdlRewrite& rewrite) {
  return Rewriter(show_create, rewrite).run();
}

std::string create_database_sql(std::string_view database, std::string_view charset, std::string_view collation) {
  std::string out = "CREATE DATABASE IF NOT EXISTS " + sql::ident(database);
  // Character set and collation names are plain words; anything else is not a name the server gave us.
  if (!charset.empty()) {
    if (!plain_name(charset)) throw Error(fmt::format("unexpected character set name {}", sql::quote(charset)));
    out += " DEFAULT CHARACTER SET " + std::string(charset);
  }
  if (!collation.empty()) {
    if (!plain_name(collation)) throw Error(fmt::format("unexpected collation name {}", sql::quote(collation)));
    out += " COLLATE " + std::string(collation);
  }
  return out;
}

}  // namespace goarchive::plan

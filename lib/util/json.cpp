#include "util/json.h"

#include <cmath>

#include <fmt/format.h>

namespace goarchive {

Json::Json(double d) : m_type(Type::number) {
  m_text = std::isfinite(d) ? fmt::format("{}", d) : "null";
}

Json& Json::set(const std::string& key, Json value) {
  for (auto& [k, v] : m_members) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  m_members.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  m_items.push_back(std::move(value));
  return *this;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void Json::dump_to(std::string& out) const {
  switch (m_type) {
    case Type::null: out += "null"; break;
    case Type::boolean: out += m_bool ? "true" : "false"; break;
    case Type::number: out += m_text; break;
    case Type::string: out += json_quote(m_text); break;
    case Type::array:
      out += '[';
      for (size_t i = 0; i < m_items.size(); ++i) {
        if (i) out += ',';
        m_items[i].dump_to(out);
      }
      out += ']';
      break;
    case Type::object:
      out += '{';
      for (size_t i = 0; i < m_members.size(); ++i) {
        if (i) out += ',';
        out += json_quote(m_members[i].first);
        out += ':';
        m_members[i].second.dump_to(out);
      }
      out += '}';
      break;
  }
}

std::string Json::dump() const {
  std::string out;
  dump_to(out);
  return out;
}

}  // namespace goarchive

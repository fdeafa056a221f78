#pragma once
// A small ordered JSON value for goarchive's machine-readable output (no JSON library ships in our Debian set).
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace goarchive {

class Json {
public:
  enum class Type { null, boolean, number, string, array, object };
  Json() = default;
  explicit Json(bool b) : m_type(Type::boolean), m_bool(b) {}
  explicit Json(int n) : m_type(Type::number), m_text(std::to_string(n)) {}
  explicit Json(long n) : m_type(Type::number), m_text(std::to_string(n)) {}
  explicit Json(long long n) : m_type(Type::number), m_text(std::to_string(n)) {}
  explicit Json(unsigned long n) : m_type(Type::number), m_text(std::to_string(n)) {}
  explicit Json(unsigned long long n) : m_type(Type::number), m_text(std::to_string(n)) {}
  explicit Json(double d);
  explicit Json(std::string s) : m_type(Type::string), m_text(std::move(s)) {}
  explicit Json(const char* s) : m_type(Type::string), m_text(s) {}
  static Json array() { Json j; j.m_type = Type::array; return j; }
  static Json object() { Json j; j.m_type = Type::object; return j; }
  // A number or object already serialised (e.g. a stored summary).
  static Json raw(std::string text) { Json j; j.m_type = Type::number; j.m_text = std::move(text); return j; }

  Json& set(const std::string& key, Json value);
  Json& push(Json value);
  std::string dump() const;

private:
  void dump_to(std::string& out) const;
  Type m_type = Type::null;
  bool m_bool = false;
  std::string m_text;
  std::vector<std::pair<std::string, Json>> m_members;
  std::vector<Json> m_items;
};

// A JSON string literal with quotes, escaped.
std::string json_quote(const std::string& s);

}  // namespace goarchive

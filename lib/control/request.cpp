#include "control/request.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace goarchive::control {

namespace {

const std::vector<std::string> k_verbs = {"status", "pause", "resume", "stop", "set"};
const std::vector<std::string> k_keys = {"batch_size", "sleep"};

[[noreturn]] void refuse(const std::string& why) { throw ConfigError(why); }

// A word of the request as a message may quote it: control bytes shown as '?', at most 40 bytes.
std::string shown(const std::string& word) {
  std::string out = word.substr(0, 40);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return word.size() > 40 ? out + "..." : out;
}

// "; did you mean ...?" or "".
std::string suggestion(const std::string& word, const std::vector<std::string>& choices) {
  std::string s = did_you_mean(close_matches(word, choices), true);
  return s.empty() ? s : "; " + s;
}

long long parse_batch_size(const std::string& v) {
  bool digits = !v.empty() && v.size() <= 7;
  for (char c : v) digits = digits && c >= '0' && c <= '9';
  long long n = digits ? std::stoll(v) : 0;
  if (!digits || n < k_min_batch_size || n > k_max_batch_size) {
    refuse(fmt::format("batch_size=\"{}\" is not allowed; use a whole number from {} to {}", shown(v), k_min_batch_size,
                       k_max_batch_size));
  }
  return n;
}

double parse_sleep(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double s = v.empty() ? -1 : std::strtod(v.c_str(), &end);
  // Digits and one '.': no sign, exponent, hex, "inf" or "nan".
  bool plain = !v.empty() && v.find_first_not_of("0123456789.") == std::string::npos;
  if (!plain || errno != 0 || end != v.c_str() + v.size() || !std::isfinite(s) || s < 0 || s > k_max_sleep) {
    refuse(fmt::format("sleep=\"{}\" is not allowed; use seconds from 0 to {:g} (e.g. 0.5)", shown(v), k_max_sleep));
  }
  return s;
}

Request parse_set(const std::vector<std::string>& words) {
  if (words.size() != 2) {
    refuse("set takes one KEY=VALUE: set batch_size=N (roots per batch) or set sleep=S (seconds between batches)");
  }
  const std::string& kv = words[1];
  auto eq = kv.find('=');
  if (eq == std::string::npos) {
    refuse(fmt::format("set {}: give KEY=VALUE, e.g. set batch_size=500 or set sleep=2", shown(kv)));
  }
  Request r;
  r.verb = Verb::set;
  r.key = kv.substr(0, eq);
  std::string value = kv.substr(eq + 1);
  if (r.key == "batch_size") {
    r.batch_size = parse_batch_size(value);
  } else if (r.key == "sleep") {
    r.sleep = parse_sleep(value);
  } else {
    refuse(fmt::format("set: unknown setting \"{}\"; a running job takes batch_size or sleep{}", shown(r.key),
                       suggestion(r.key, k_keys)));
  }
  return r;
}

}  // namespace

const char* to_string(Verb verb) {
  switch (verb) {
    case Verb::status: return "status";
    case Verb::pause: return "pause";
    case Verb::resume: return "resume";
    case Verb::stop: return "stop";
    case Verb::set: return "set";
  }
  return "?";
}

Request parse_request(const std::vector<std::string>& words) {
  if (words.empty()) refuse("no request given; use status, pause, resume, stop or set KEY=VALUE");
  const std::string& verb = words[0];
  if (verb == "set") return parse_set(words);
  for (Verb v : {Verb::status, Verb::pause, Verb::resume, Verb::stop}) {
    if (verb != to_string(v)) continue;
    if (words.size() > 1) refuse(fmt::format("{} takes no argument (got \"{}\")", verb, shown(words[1])));
    Request r;
    r.verb = v;
    return r;
  }
  refuse(fmt::format("unknown request \"{}\"; use status, pause, resume, stop or set KEY=VALUE{}", shown(verb),
                     suggestion(verb, k_verbs)));
}

Request parse_request_line(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return parse_request(words);
}

std::string to_line(const Request& r) {
  if (r.verb != Verb::set) return to_string(r.verb);
  if (r.key == "batch_size") return fmt::format("set batch_size={}", r.batch_size);
  return fmt::format("set sleep={}", r.sleep);
}

}  // namespace goarchive::control

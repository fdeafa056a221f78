// `goarchive ctl`: one request to a running job's control socket (app/control_socket.h), its JSON reply printed
// on stdout. Exit 0 when the run did it, 2 for a request it refused (or that is not one), 1 when no run answers.
// It never touches a server.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/control_socket.h"
#include "control/request.h"
#include "util/error.h"

namespace goarchive::app {

namespace {

constexpr int k_answer_ms = 10000;  // the run answers between two statements; a batch boundary is not awaited

// The string value of "key" in a one-line JSON object our socket wrote (escapes \" \\ \n \t undone; others kept).
std::string string_field(const std::string& json, const std::string& key) {
  std::string tag = "\"" + key + "\":\"";
  auto at = json.find(tag);
  if (at == std::string::npos) return "";
  std::string out;
  for (size_t i = at + tag.size(); i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) {
      char c = json[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c == '"' || c == '\\' || c == '/' ? c : '?';
      continue;
    }
    out += json[i];
  }
  return out;
}

int int_field(const std::string& json, const std::string& key, int otherwise) {
  std::string tag = "\"" + key + "\":";
  auto at = json.find(tag);
  if (at == std::string::npos) return otherwise;
  try {
    return std::stoi(json.substr(at + tag.size()));
  } catch (const std::exception&) {
    return otherwise;
  }
}

// The one reply line; throws Error (exit 1) when the run does not answer.
std::string exchange(int fd, const std::string& path, const std::string& line) {
  std::string out = line + "\n";
  for (size_t sent = 0; sent < out.size();) {
    ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("the run closed its control socket {} before the request was sent", path));
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, k_answer_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      throw Error(fmt::format("no answer on the control socket {} within {} s", path, k_answer_ms / 1000));
    }
    char chunk[4096];
    ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw Error(fmt::format("the run closed its control socket {} without an answer", path));
    reply.append(chunk, static_cast<size_t>(got));
  }
  return reply.substr(0, reply.find('\n'));
}

}  // namespace

int ctl(const std::string& socket_path, const std::string& job, const std::vector<std::string>& words) {
  control::Request request = control::parse_request(words);
  std::string who = job.empty() ? "" : " of job " + job;
  int err = 0;
  int fd = connect_control(socket_path, err);
  if (fd < 0) {
    if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR) {
      throw Error(fmt::format("no run{} is active: nothing answers on the control socket {} ({})", who, socket_path,
                              err == ECONNREFUSED ? "nobody listens on it" : "it does not exist"));
    }
    if (err == EACCES || err == EPERM) {
      throw Error(fmt::format("permission denied on the control socket {}: only the user the run runs as, or root, "
                              "may control it",
                              socket_path));
    }
    throw Error(fmt::format("cannot reach the control socket {}: {}", socket_path, std::strerror(err)));
  }
  std::string reply;
  try {
    reply = exchange(fd, socket_path, control::to_line(request));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  std::cout << reply << "\n" << std::flush;
  if (reply.rfind("{\"ok\":true", 0) == 0) return k_exit_ok;
  std::string error = string_field(reply, "error");
  throw Error("the run refused the request: " + (error.empty() ? reply : error),
              int_field(reply, "exit_code", k_exit_usage));
}

}  // namespace goarchive::app

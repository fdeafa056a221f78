// The control socket (issue 36, part 4) without a server: the requests of `goarchive ctl` (control/request.h), the
// [control] socket key and its expansion (config/control.cpp), what Steering answers and hands to the run, and the
// socket itself (app/control_socket.h) in a temporary directory: refused paths left as they were, mode 0600, a
// stale socket replaced, a live one refused, one JSON line per request, removed at the end.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "app/control_socket.h"
#include "app/steering.h"
#include "config/config.h"
#include "control/request.h"
#include "helpers.h"
#include "util/error.h"

using goarchive::ConfigError;
using goarchive::app::ControlSocket;
using goarchive::app::Steering;
using goarchive::config::control_socket_path;
using goarchive::control::parse_request;
using goarchive::control::parse_request_line;
using goarchive::control::Request;
using goarchive::control::to_line;
using goarchive::control::Verb;
using goarchive::test::message_of;

namespace {

Request parse(std::vector<std::string> words) { return parse_request(words); }

std::string refusal(std::vector<std::string> words) {
  return message_of<ConfigError>([&] { parse_request(words); });
}

std::string config_with(const std::string& control, const std::string& jobs = "[jobs.j]\nroot_table = \"t\"\n"
                                                                               "where = \"1=1\"\n") {
  return "[source]\nuser = \"u\"\ndatabase = \"s\"\n[destination]\nuser = \"u\"\ndatabase = \"d\"\n" + control + jobs;
}

goarchive::config::Config load(const std::string& text) { return goarchive::config::load_string(text, "t.toml", {}); }

// A fresh directory under TMPDIR, removed by the test's end (rm -r of what the tests made).
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/ga-ctl-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path = buf.data();
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// One request line to the socket at `path`, its one reply line (without the newline).
std::string ask(const std::string& path, const std::string& line) {
  int err = 0;
  int fd = goarchive::app::connect_control(path, err);
  REQUIRE(fd >= 0);
  std::string out = line + "\n";
  REQUIRE(::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size()));
  std::string reply;
  char c;
  while (::recv(fd, &c, 1, 0) == 1 && c != '\n') reply += c;
  ::close(fd);
  return reply;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("control requests: the five verbs and set's two keys") {
  CHECK(parse({"status"}).verb == Verb::status);
  CHECK(parse({"pause"}).verb == Verb::pause);
  CHECK(parse({"resume"}).verb == Verb::resume);
  CHECK(parse({"stop"}).verb == Verb::stop);
  Request b = parse({"set", "batch_size=250"});
  CHECK(b.verb == Verb::set);
  CHECK(b.key == "batch_size");
  CHECK(b.batch_size == 250);
  Request s = parse({"set", "sleep=0.5"});
  CHECK(s.key == "sleep");
  CHECK(s.sleep == doctest::Approx(0.5));
  CHECK(parse({"set", "sleep=0"}).sleep == 0);
  CHECK(parse({"set", "batch_size=100000"}).batch_size == 100000);
  // The line the client sends is the one the socket reads back.
  CHECK(to_line(b) == "set batch_size=250");
  CHECK(to_line(s) == "set sleep=0.5");
  CHECK(parse_request_line("  set\tbatch_size=7 \r").batch_size == 7);
  CHECK(parse_request_line("stop").verb == Verb::stop);
}

TEST_CASE("control requests: what is not one is refused, saying what is") {
  CHECK(refusal({}) == "no request given; use status, pause, resume, stop or set KEY=VALUE");
  CHECK(refusal({"paws"}).find("unknown request \"paws\"; use status, pause, resume, stop or set KEY=VALUE; did you "
                               "mean \"pause\"") == 0);
  CHECK(refusal({"status", "now"}) == "status takes no argument (got \"now\")");
  CHECK(refusal({"set"}).find("set takes one KEY=VALUE") == 0);
  CHECK(refusal({"set", "batch_size"}) == "set batch_size: give KEY=VALUE, e.g. set batch_size=500 or set sleep=2");
  CHECK(refusal({"set", "batch_size=0"}) == "batch_size=\"0\" is not allowed; use a whole number from 1 to 100000");
  CHECK(refusal({"set", "batch_size=100001"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "batch_size=-5"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "batch_size=1e3"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "batch_size="}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "sleep=-1"}) == "sleep=\"-1\" is not allowed; use seconds from 0 to 3600 (e.g. 0.5)");
  CHECK(refusal({"set", "sleep=3601"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "sleep=nan"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "sleep=1.2.3"}).find("is not allowed") != std::string::npos);
  CHECK(refusal({"set", "delete_batch_size=5"}).find("set: unknown setting \"delete_batch_size\"; a running job takes "
                                                     "batch_size or sleep") == 0);
  // A control byte from a peer is never echoed raw into a log line.
  CHECK(refusal({"st\x1b[2Jop"}).find("st?[2Jop") != std::string::npos);
}

TEST_CASE("[control] socket: off by default, %j expanded, every bad pattern refused with its line") {
  CHECK(load(config_with("")).control.socket.empty());
  CHECK(load(config_with("")).settings.at("control.socket").value.empty());
  auto cfg = load(config_with("[control]\nsocket = \"/run/goarchive/%j.sock\"\n"));
  CHECK(cfg.control.socket == "/run/goarchive/%j.sock");
  CHECK(control_socket_path(cfg.control.socket, "orders") == "/run/goarchive/orders.sock");
  CHECK(control_socket_path("/run/g/%j-%%.sock", "a") == "/run/g/a-%.sock");
  CHECK(control_socket_path("", "a").empty());
  auto bad = [](const std::string& control) {
    return message_of<ConfigError>([&] { load(config_with("[control]\n" + control + "\n")); });
  };
  CHECK(bad("socket = \"run/%j.sock\"") ==
        "t.toml:8: control.socket \"run/%j.sock\" must be an absolute path (e.g. \"/run/goarchive/%j.sock\")");
  CHECK(bad("socket = \"/run/%s.sock\"").find("has \"%s\" at byte 6; only %j (the job name) and %% (a '%') may "
                                              "follow a '%'") != std::string::npos);
  CHECK(bad("socket = \"/run/x%\"").find("only %j") != std::string::npos);
  CHECK(bad("socket = \"/run//x.sock\"").find("empty, \".\" or \"..\" component") != std::string::npos);
  CHECK(bad("socket = \"/run/goarchive/\"").find("empty, \".\" or \"..\" component") != std::string::npos);
  CHECK(bad("socket = \"/run/../x.sock\"").find("component") != std::string::npos);
  CHECK(bad("socket = \"/" + std::string(120, 'a') + "/%j.sock\"").find("a Unix socket path holds at most 107") !=
        std::string::npos);
  CHECK(bad("socket = 5").find("control.socket must be a string") != std::string::npos);
  CHECK(bad("sock = \"/run/x\"").find("unknown key control.sock") != std::string::npos);
  // A job name that would leave the directory ("..") is refused for that job.
  std::string dotdot = message_of<ConfigError>([&] {
    load(config_with("[control]\nsocket = \"/run/%j/ctl.sock\"\n", "[jobs.\"..\"]\nroot_table = \"t\"\nwhere = \"1=1\"\n"));
  });
  CHECK(dotdot.find("(job ..)") != std::string::npos);
  // The length is judged with each job's name.
  std::string longest = message_of<ConfigError>([&] {
    load(config_with("[control]\nsocket = \"/" + std::string(90, 'a') + "/%j.sock\"\n",
                     "[jobs." + std::string(30, 'j') + "]\nroot_table = \"t\"\nwhere = \"1=1\"\n"));
  });
  CHECK(longest.find("holds at most 107") != std::string::npos);
}

TEST_CASE("Steering: pause, resume, stop and set as the run's main thread sees them") {
  Steering s;
  s.describe("j", "archive", 1000, 0);
  s.set_run_id(7);
  CHECK(!s.pause_requested());
  std::string r = s.answer(parse({"pause"}), 1000);
  CHECK(r.find(R"({"ok":true,"job":"j","request":"pause","state":"pausing")") == 0);
  CHECK(s.pause_requested());
  s.set_holding(true);
  CHECK(s.answer(parse({"status"}), 1000).find(R"("state":"paused")") != std::string::npos);
  CHECK(s.answer(parse({"resume"}), 1000).find(R"("state":"running","message":"the run continues")") !=
        std::string::npos);
  CHECK(!s.pause_requested());
  // A setting waits in "pending" until the run takes it at a boundary.
  s.answer(parse({"set", "batch_size=5"}), 1000);
  CHECK(s.answer(parse({"status"}), 1000).find(R"("batch_size":1000,"sleep":0,"pending":{"batch_size":5})") !=
        std::string::npos);
  CHECK(s.take_batch_size() == 5);
  CHECK(!s.take_batch_size());
  CHECK(!s.take_sleep());
  std::string status = s.answer(parse({"status"}), 1000);
  CHECK(status.find(R"("batch_size":5,"sleep":0,"line")") != std::string::npos);
  CHECK(status.find(R"({"ok":true,"job":"j","command":"archive","run_id":7,"pid":)") == 0);
  CHECK(!s.stop_requested_by());
  CHECK(s.answer(parse({"stop"}), 0).find(R"("state":"stopping")") != std::string::npos);
  CHECK(s.stop_requested_by() == 0u);
  s.answer(parse({"stop"}), 1000);
  CHECK(s.stop_requested_by() == 0u);  // the first one who asked
}

TEST_CASE("Steering: status shows the progress the run last showed") {
  Steering s;
  s.describe("j", "purge", 10, 0.5);
  Steering::Shown shown;
  shown.phase = "deleting";
  shown.batches = 3;
  shown.roots = 30;
  shown.roots_total = 90;
  shown.line = "deleting | roots 30/~90 (33%)";
  goarchive::pipeline::TableStats t;
  t.table = "orders";
  t.copied = 30;
  t.verified = 30;
  t.deleted = 20;
  shown.tables.push_back(t);
  s.show(shown);
  std::string status = s.answer(parse({"status"}), 0);
  CHECK(status.find(R"("state":"running","phase":"deleting","batches":3,"roots":30,"roots_total":90,)"
                    R"("rows":{"orders":{"copied":30,"verified":30,"deleted":20}},"elapsed":)") != std::string::npos);
  CHECK(status.find(R"x("batch_size":10,"sleep":0.5,"line":"deleting | roots 30/~90 (33%)"})x") != std::string::npos);
}

TEST_CASE("control socket: a path that is not a socket of ours is refused and left as it was") {
  TempDir d;
  std::string file = d.path + "/j.sock";
  { std::ofstream(file) << "keep me"; }
  std::string why = message_of<ConfigError>([&] { ControlSocket::check_path(file); });
  CHECK(why.find("the path exists and is a regular file") != std::string::npos);
  Steering s;
  CHECK(message_of<ConfigError>([&] { ControlSocket sock(file, s); }).find("a regular file") != std::string::npos);
  CHECK(read_file(file) == "keep me");

  std::string link = d.path + "/l.sock";
  REQUIRE(::symlink(file.c_str(), link.c_str()) == 0);
  CHECK(message_of<ConfigError>([&] { ControlSocket sock(link, s); }).find("a symbolic link") != std::string::npos);
  CHECK(read_file(file) == "keep me");

  std::string dangling = d.path + "/dangling.sock";
  REQUIRE(::symlink((d.path + "/nowhere").c_str(), dangling.c_str()) == 0);
  CHECK(message_of<ConfigError>([&] { ControlSocket sock(dangling, s); }).find("a symbolic link") !=
        std::string::npos);
  struct stat st {};
  CHECK(::lstat((d.path + "/nowhere").c_str(), &st) != 0);  // nothing created through the link

  // A directory every user may write to (no sticky bit), a symbolic link as the directory, a missing grandparent.
  std::string open_dir = d.path + "/open";
  REQUIRE(::mkdir(open_dir.c_str(), 0777) == 0);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  CHECK(message_of<ConfigError>([&] { ControlSocket::check_path(open_dir + "/j.sock"); })
            .find("is writable by every user (and not sticky)") != std::string::npos);
  std::string dir_link = d.path + "/dirlink";
  REQUIRE(::symlink(d.path.c_str(), dir_link.c_str()) == 0);
  CHECK(message_of<ConfigError>([&] { ControlSocket::check_path(dir_link + "/j.sock"); })
            .find("is a symbolic link") != std::string::npos);
  CHECK(message_of<ConfigError>([&] { ControlSocket::check_path(d.path + "/a/b/j.sock"); })
            .find("does not exist, nor does") != std::string::npos);
  CHECK(::lstat((d.path + "/a").c_str(), &st) != 0);
}

TEST_CASE("control socket: made 0600 in a directory made 0700, answers one JSON line per request, removed at the end") {
  TempDir d;
  std::string dir = d.path + "/run";
  std::string path = dir + "/j.sock";
  Steering s;
  s.describe("j", "archive", 100, 0);
  {
    ControlSocket sock(path, s);
    struct stat st {};
    REQUIRE(::lstat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(ask(path, "status").find(R"({"ok":true,"job":"j","command":"archive")") == 0);
    CHECK(ask(path, "pause").find(R"("state":"pausing")") != std::string::npos);
    CHECK(s.pause_requested());
    CHECK(ask(path, "set batch_size=0") ==
          R"({"ok":false,"error":"batch_size=\"0\" is not allowed; use a whole number from 1 to 100000","exit_code":2})");
    // A second socket at the same path while this one answers: refused, and this one still answers.
    Steering other;
    CHECK(message_of<ConfigError>([&] { ControlSocket again(path, other); }).find("another process answers on it") !=
          std::string::npos);
    CHECK(ask(path, "resume").find(R"("state":"running")") != std::string::npos);
  }
  struct stat st {};
  CHECK(::lstat(path.c_str(), &st) != 0);  // removed
}

TEST_CASE("control socket: a stale socket of ours (nobody listens) is replaced") {
  TempDir d;
  std::string path = d.path + "/j.sock";
  // A socket file whose listener is gone, as a killed run leaves it.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(fd);
  }
  Steering s;
  s.describe("j", "archive", 1, 0);
  ControlSocket sock(path, s);
  CHECK(ask(path, "status").find(R"({"ok":true)") == 0);
}

TEST_CASE("control socket: a request from another uid is refused and changes nothing (SO_PEERCRED)") {
  // Needs root, to be another user in a child; the socket's mode 0600 alone keeps other users out, so the test
  // opens it up to reach the check behind it.
  if (::geteuid() != 0) return;
  TempDir d;
  REQUIRE(::chmod(d.path.c_str(), 0755) == 0);
  std::string path = d.path + "/j.sock";
  Steering s;
  s.describe("j", "archive", 1, 0);
  ControlSocket sock(path, s);
  REQUIRE(::chmod(path.c_str(), 0666) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    int err = 0;
    int fd = goarchive::app::connect_control(path, err);
    if (fd < 0) ::_exit(4);
    const char line[] = "stop\n";
    if (::send(fd, line, sizeof(line) - 1, MSG_NOSIGNAL) != sizeof(line) - 1) ::_exit(5);
    std::string reply;
    char c;
    while (::recv(fd, &c, 1, 0) == 1 && c != '\n') reply += c;
    ::_exit(reply.find(R"({"ok":false,"error":"permission denied: only uid 0 or root may control this run")") == 0 ? 0
                                                                                                                    : 6);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(!s.stop_requested_by());
}

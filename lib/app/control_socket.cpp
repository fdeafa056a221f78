#include "app/control_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"

namespace goarchive::app {

namespace {

constexpr size_t k_max_line = 4096;      // a request longer than this is refused and the connection closed
constexpr int k_idle_ms = 5000;          // a connection silent this long is closed (one client at a time)

std::string os_error(int err) { return std::strerror(err); }

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw ConfigError(fmt::format("control socket {}: {}; goarchive creates nothing there and removes nothing (set "
                                "[control] socket to another path, see goarchive.toml(5))",
                                path, why));
}

// Why the directory `dir` may not hold the socket, or "" when it may.
std::string directory_problem(const std::string& dir, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return fmt::format("its directory {} is a symbolic link", dir);
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir);
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return fmt::format("its directory {} belongs to uid {}, neither this user nor root", dir, st.st_uid);
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    return fmt::format("its directory {} is writable by every user (and not sticky)", dir);
  }
  return "";
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    throw ConfigError(fmt::format("control socket path \"{}\" is empty or longer than {} bytes", path,
                                  sizeof(addr.sun_path) - 1));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Writes all of `text`; false when the peer went away (never SIGPIPE).
bool send_all(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int connect_control(const std::string& path, int& err) {
  sockaddr_un addr = address_of(path);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  while (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == EINTR) continue;
    err = errno;
    ::close(fd);
    return -1;
  }
  err = 0;
  return fd;
}

void ControlSocket::check_path(const std::string& path) {
  address_of(path);
  std::string dir = parent_of(path);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) refuse(path, fmt::format("cannot look at its directory {}: {}", dir, os_error(errno)));
    // Created 0700 when the run starts: its own parent must exist.
    std::string above = parent_of(dir);
    if (::lstat(above.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      refuse(path, fmt::format("its directory {} does not exist, nor does {} to create it in", dir, above));
    }
  } else if (std::string why = directory_problem(dir, st); !why.empty()) {
    refuse(path, why);
  }
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    refuse(path, fmt::format("cannot look at it: {}", os_error(errno)));
  }
  if (S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid()) return;  // stale or live: judged when it is created
  const char* what = S_ISREG(st.st_mode)   ? "a regular file"
                     : S_ISLNK(st.st_mode) ? "a symbolic link"
                     : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISSOCK(st.st_mode) ? "another user's socket"
                                            : "not a socket";
  refuse(path, fmt::format("the path exists and is {}", what));
}

ControlSocket::ControlSocket(std::string path, Steering& steering) : m_path(std::move(path)), m_steering(steering) {
  check_path(m_path);
  std::string dir = parent_of(m_path);
  if (::mkdir(dir.c_str(), 0700) == 0) {
    spdlog::info("created the directory {} (mode 0700) for the control socket", dir);
  } else if (errno != EEXIST) {
    refuse(m_path, fmt::format("cannot create its directory {}: {} (create it, e.g. systemd's RuntimeDirectory=)",
                               dir, os_error(errno)));
  }
  check_path(m_path);  // again: the directory was made (or appeared) since
  struct stat st {};
  if (::lstat(m_path.c_str(), &st) == 0) {
    int err = 0;
    int fd = connect_control(m_path, err);
    if (fd >= 0) {
      ::close(fd);
      refuse(m_path, "another process answers on it (a run of another job with the same socket path? put %j in "
                     "the path)");
    }
    if (err != ECONNREFUSED) refuse(m_path, fmt::format("an existing socket there cannot be judged: {}", os_error(err)));
    // A socket of ours that nobody listens on: left by a run that was killed.
    if (::unlink(m_path.c_str()) != 0) refuse(m_path, fmt::format("cannot remove the stale socket: {}", os_error(errno)));
    spdlog::info("removed the stale control socket {} of an earlier run", m_path);
  }
  sockaddr_un addr = address_of(m_path);
  m_listen = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m_listen < 0) refuse(m_path, fmt::format("cannot create a socket: {}", os_error(errno)));
  // bind creates the file, never through a symbolic link and never over an existing name (EADDRINUSE); the
  // umask makes it 0600 from its first moment (no other thread creates files while the run starts).
  mode_t old = ::umask(0177);
  int bound = ::bind(m_listen, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  int bind_err = errno;
  ::umask(old);
  if (bound != 0 || ::listen(m_listen, 8) != 0 || ::pipe2(m_wake, O_CLOEXEC) != 0) {
    int err = bound != 0 ? bind_err : errno;
    ::close(m_listen);
    if (bound == 0) ::unlink(m_path.c_str());
    refuse(m_path, fmt::format("cannot listen on it: {}", os_error(err)));
  }
  if (::lstat(m_path.c_str(), &st) == 0) {
    m_dev = st.st_dev;
    m_ino = st.st_ino;
  }
  spdlog::info("control socket {} (mode 0600) answers goarchive ctl", m_path);
  m_thread = std::thread([this] { serve(); });
}

ControlSocket::~ControlSocket() {
  if (m_wake[1] >= 0) {
    char c = 0;
    while (::write(m_wake[1], &c, 1) < 0 && errno == EINTR) {
    }
  }
  if (m_thread.joinable()) m_thread.join();
  for (int fd : {m_listen, m_wake[0], m_wake[1]}) {
    if (fd >= 0) ::close(fd);
  }
  // Only the socket this object made: never a file someone put at the path since.
  struct stat st {};
  if (::lstat(m_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == m_dev && st.st_ino == m_ino) {
    ::unlink(m_path.c_str());
  }
}

void ControlSocket::serve() {
  while (true) {
    pollfd fds[2] = {{m_listen, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("control socket {}: poll failed ({}); it answers no more", m_path, os_error(errno));
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors, or the peer gave up: never a busy loop over a listener that stays readable.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    try {
      converse(fd);
    } catch (const std::exception& e) {
      spdlog::warn("control socket {}: {}", m_path, e.what());
    }
    ::close(fd);
  }
}

void ControlSocket::converse(int fd) {
  std::string buffer;
  while (true) {
    size_t eol;
    while ((eol = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, eol);
      buffer.erase(0, eol + 1);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (!send_all(fd, reply(fd, line) + "\n")) return;
    }
    if (buffer.size() > k_max_line) {
      send_all(fd, Steering::refusal(fmt::format("a request is one line of at most {} bytes", k_max_line), 2) + "\n");
      return;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
    int n = ::poll(fds, 2, k_idle_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents) return;  // idle too long, or the run ends
    char chunk[512];
    ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    buffer.append(chunk, static_cast<size_t>(got));
  }
}

std::string ControlSocket::reply(int fd, const std::string& line) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    spdlog::warn("control socket {}: a request from an unknown peer refused ({})", m_path, os_error(errno));
    return Steering::refusal("the peer's credentials cannot be read", 1);
  }
  if (peer.uid != ::geteuid() && peer.uid != 0) {
    spdlog::warn("control socket {}: a request from uid {} (pid {}) refused: only uid {} or root may control this "
                 "run",
                 m_path, peer.uid, peer.pid, ::geteuid());
    return Steering::refusal(fmt::format("permission denied: only uid {} or root may control this run", ::geteuid()),
                             1);
  }
  control::Request request;
  try {
    request = control::parse_request_line(line);
  } catch (const Error& e) {
    spdlog::warn("control socket: a request from uid {} (pid {}) refused: {}", peer.uid, peer.pid, e.what());
    return Steering::refusal(e.what(), e.exit_code());
  }
  spdlog::info("control: {} from uid {} (pid {})", control::to_line(request), peer.uid, peer.pid);
  return m_steering.answer(request, peer.uid);
}

}  // namespace goarchive::app

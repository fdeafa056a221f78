#pragma once
// The control socket of a running job ([control] socket, `goarchive ctl`): a Unix stream socket created safely
// (its directory an existing one that no other user can write to, or made 0700 by us; never through a symbolic
// link; never over anything but a stale socket of our own; mode 0600), served by a thread of its own that reads
// one request per line, lets only the process's own uid or root through (SO_PEERCRED), logs each request with the
// peer's uid and answers each with one JSON line from Steering. Removed when the run ends. It never touches the
// run's sessions or rows; the run obeys at its batch boundaries (RunControl).
#include <sys/types.h>

#include <string>
#include <thread>

#include "app/steering.h"

namespace goarchive::app {

// A connected stream socket to the Unix socket at `path`, or -1 with `err` set to the errno (ENOENT: no such
// file, ECONNREFUSED: nobody listens). Throws ConfigError for a path longer than a socket address holds.
int connect_control(const std::string& path, int& err);

class ControlSocket {
public:
  // Refuses (ConfigError, exit 2) a path where the socket could not be created safely, creating and removing
  // nothing: a parent that is missing (its own parent too), a symbolic link, not a directory, another user's, or
  // writable by every user without the sticky bit; or anything but a socket of this user's at the path itself.
  static void check_path(const std::string& path);

  // Creates the socket at `path` (after check_path; a stale socket of ours is replaced, a live one refused) and
  // starts serving `steering`. Throws ConfigError when it cannot.
  ControlSocket(std::string path, Steering& steering);
  // Stops serving and removes the socket, when the file at the path is still the one this object made.
  ~ControlSocket();
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  const std::string& path() const { return m_path; }

private:
  void serve();                  // the thread: accepts connections one at a time until stopped
  void converse(int fd);         // one connection: lines in, one JSON line out for each
  std::string reply(int fd, const std::string& line);

  std::string m_path;
  Steering& m_steering;
  int m_listen = -1;
  int m_wake[2] = {-1, -1};  // a pipe: the destructor writes to it to stop the thread
  dev_t m_dev = 0;
  ino_t m_ino = 0;
  std::thread m_thread;  // last: started once every member above exists
};

}  // namespace goarchive::app

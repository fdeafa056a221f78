#include "app/metrics_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include <spdlog/spdlog.h>

namespace goarchive::app {

namespace {

// The earlier file's text, or "" when there is none to read. Never through a symlink (a planted one could make a
// root run read any file) and never a FIFO or device (O_NONBLOCK: opening a FIFO does not wait for a writer).
std::string read_earlier(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[8192];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

bool write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_metrics(const std::string& path, const report::RunInfo& info, const pipeline::Stats& stats) {
  double now = static_cast<double>(std::time(nullptr));
  std::string text = report::metrics_text(info, stats, now, info.exit_code == 0);
  if (info.exit_code != 0) {
    std::istringstream old(read_earlier(path));
    std::string line;
    while (std::getline(old, line)) {
      if (line.rfind("goarchive_last_success_timestamp_seconds", 0) == 0 ||
          line.rfind("# HELP goarchive_last_success", 0) == 0 || line.rfind("# TYPE goarchive_last_success", 0) == 0) {
        text += line + "\n";
      }
    }
  }
  // A new file of a name nobody else holds (mkstemp: O_CREAT | O_EXCL, so never an existing file and never
  // through a symlink planted at that name), in the target's directory so that the rename stays on its file
  // system. A fixed PATH.tmp opened plainly let anyone who can write the collector's directory make a root run
  // overwrite any file.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    spdlog::warn("could not create a temporary file beside the metrics file {}: {}", path, std::strerror(errno));
    return;
  }
  // mkstemp creates the file 0600; the collector often runs as another user.
  bool ok = ::fchmod(fd, 0644) == 0 && write_all(fd, text) && ::fsync(fd) == 0;
  int saved = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    spdlog::warn("could not write the metrics file {}: {}", tmp, std::strerror(saved ? saved : errno));
    ::unlink(tmp.c_str());
    return;
  }
  // rename replaces the name itself: a symlink planted at `path` is replaced, its target untouched.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::warn("could not rename {} to {}: {}", tmp, path, std::strerror(errno));
    ::unlink(tmp.c_str());
  }
}

}  // namespace goarchive::app

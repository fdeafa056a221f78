#include "db/parallel.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace goarchive::db {

void execute_all(Connection& conn, const std::vector<std::string>& statements, const Opener& open, size_t extra,
                 const std::function<bool(const DbError&)>& tolerate) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr first;
  auto work = [&](Connection& c) {
    try {
      while (!failed) {
        size_t i = next++;
        if (i >= statements.size()) break;
        try {
          c.execute(statements[i]);
        } catch (const DbError& e) {
          if (!tolerate(e)) throw;
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(mutex);
      if (!first) first = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> helpers;
  if (open && statements.size() > 1) {
    for (size_t h = 0; h < extra && h + 1 < statements.size(); ++h) {
      helpers.emplace_back([&] {
        std::unique_ptr<Connection> c;
        try {
          c = open();
        } catch (const std::exception& e) {
          spdlog::debug("an extra session for independent statements could not be opened: {}", e.what());
          return;
        }
        work(*c);
      });
    }
  }
  work(conn);
  for (auto& t : helpers) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace goarchive::db

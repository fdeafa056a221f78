#pragma once
// A thread that runs tasks one after another: the owner of the source connection in the pipelined loop.
// Destroying it waits for the task under way (its transaction commits or rolls back) and drops queued ones.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace goarchive::pipeline {

class SourceWorker {
public:
  SourceWorker();
  ~SourceWorker();
  SourceWorker(const SourceWorker&) = delete;
  SourceWorker& operator=(const SourceWorker&) = delete;

  // Queues `fn`; the future carries its exception, if any.
  std::future<void> submit(std::function<void()> fn);

private:
  void loop();

  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::function<void()>> m_queue;
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace goarchive::pipeline

#include "pipeline/source_worker.h"

namespace goarchive::pipeline {

SourceWorker::SourceWorker() : m_thread([this] { loop(); }) {}

SourceWorker::~SourceWorker() {
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

std::future<void> SourceWorker::submit(std::function<void()> fn) {
  auto task = std::make_shared<std::packaged_task<void()>>(std::move(fn));
  std::future<void> f = task->get_future();
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_queue.push_back([task] { (*task)(); });
  }
  m_cv.notify_one();
  return f;
}

void SourceWorker::loop() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(m_mutex);
      m_cv.wait(l, [this] { return m_stop || !m_queue.empty(); });
      if (m_stop) return;
      job = std::move(m_queue.front());
      m_queue.pop_front();
    }
    job();
  }
}

}  // namespace goarchive::pipeline

#include "app/steering.h"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

#include "util/json.h"

namespace goarchive::app {

namespace {

double tenths(double seconds) { return std::round(seconds * 10) / 10; }

}  // namespace

void Steering::describe(const std::string& job, const std::string& command, long long batch_size, double sleep) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_job = job;
  m_command = command;
  m_batch_size = batch_size;
  m_sleep = sleep;
}

void Steering::set_run_id(unsigned long long run_id) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_run_id = run_id;
}

std::string Steering::state() const {
  if (m_stopper) return "stopping";
  if (m_pause) return m_holding ? "paused" : "pausing";
  return "running";
}

std::string Steering::status_json() const {
  Json rows = Json::object();
  for (const auto& t : m_shown.tables) {
    rows.set(t.table, Json::object()
                          .set("copied", Json(t.copied))
                          .set("verified", Json(t.verified))
                          .set("deleted", Json(t.deleted)));
  }
  Json j = Json::object();
  j.set("ok", Json(true))
      .set("job", Json(m_job))
      .set("command", Json(m_command))
      .set("run_id", Json(m_run_id))
      .set("pid", Json(static_cast<long long>(::getpid())))
      .set("state", Json(state()))
      .set("phase", Json(m_shown.phase))
      .set("batches", Json(m_shown.batches))
      .set("roots", Json(m_shown.roots))
      .set("roots_total", m_shown.roots_total ? Json(*m_shown.roots_total) : Json())
      .set("rows", std::move(rows))
      .set("elapsed", Json(tenths(std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count())))
      .set("batch_size", Json(m_batch_size))
      .set("sleep", Json(m_sleep));
  if (m_new_batch_size || m_new_sleep) {
    Json pending = Json::object();
    if (m_new_batch_size) pending.set("batch_size", Json(*m_new_batch_size));
    if (m_new_sleep) pending.set("sleep", Json(*m_new_sleep));
    j.set("pending", std::move(pending));
  }
  j.set("line", Json(m_shown.line));
  return j.dump();
}

std::string Steering::answer(const control::Request& r, unsigned uid) {
  std::lock_guard<std::mutex> g(m_mutex);
  if (r.verb == control::Verb::status) return status_json();
  std::string message;
  switch (r.verb) {
    case control::Verb::pause:
      message = m_pause ? "already paused or pausing"
                        : "the run pauses at its next batch boundary, with no transaction open, until resume or stop";
      m_pause = true;
      break;
    case control::Verb::resume:
      message = m_pause ? "the run continues" : "the run was not paused";
      m_pause = false;
      break;
    case control::Verb::stop:
      if (!m_stopper) m_stopper = uid;
      message = "the run stops cleanly at its next batch boundary, as on SIGTERM (exit 143); the next run continues";
      break;
    case control::Verb::set:
      if (r.key == "batch_size") {
        m_new_batch_size = r.batch_size;
        message = fmt::format("batch_size {} from the next batch", r.batch_size);
      } else {
        m_new_sleep = r.sleep;
        message = fmt::format("sleep {}s from the next batch boundary", r.sleep);
      }
      break;
    case control::Verb::status: break;
  }
  return Json::object()
      .set("ok", Json(true))
      .set("job", Json(m_job))
      .set("request", Json(control::to_line(r)))
      .set("state", Json(state()))
      .set("message", Json(message))
      .dump();
}

std::string Steering::refusal(const std::string& error, int exit_code) {
  return Json::object().set("ok", Json(false)).set("error", Json(error)).set("exit_code", Json(exit_code)).dump();
}

bool Steering::pause_requested() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_pause;
}

void Steering::set_holding(bool holding) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_holding = holding;
}

std::optional<unsigned> Steering::stop_requested_by() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_stopper;
}

std::optional<long long> Steering::take_batch_size() {
  std::lock_guard<std::mutex> g(m_mutex);
  auto n = m_new_batch_size;
  m_new_batch_size.reset();
  if (n) m_batch_size = *n;
  return n;
}

std::optional<double> Steering::take_sleep() {
  std::lock_guard<std::mutex> g(m_mutex);
  auto s = m_new_sleep;
  m_new_sleep.reset();
  if (s) m_sleep = *s;
  return s;
}

void Steering::show(Shown shown) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_shown = std::move(shown);
}

}  // namespace goarchive::app

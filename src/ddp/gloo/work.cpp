#include "ddp/gloo/work.h"

#include <ddp/errors.h>

namespace ddp::gloo_backend {

GlooWork::GlooWork(std::string description) : description_(std::move(description)) {}

std::shared_ptr<GlooWork> GlooWork::failed(std::string description, std::exception_ptr error) {
  auto w = std::make_shared<GlooWork>(std::move(description));
  w->finish(error);
  return w;
}

bool GlooWork::is_completed() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void GlooWork::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void GlooWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_; }))
    throw TimeoutError(description_ + " did not complete within " + std::to_string(timeout.count()) +
                       " ms of this wait (the operation is still running)");
  if (error_) std::rethrow_exception(error_);
}

std::exception_ptr GlooWork::exception() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void GlooWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = error;
  }
  cv_.notify_all();
}

OpQueue::OpQueue() : thread_([this] { loop(); }) {}

OpQueue::~OpQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void OpQueue::push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void OpQueue::loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ddp::gloo_backend

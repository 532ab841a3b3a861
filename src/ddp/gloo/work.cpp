#include "ddp/gloo/work.h"

#include <ddp/errors.h>

#include <algorithm>

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

OpQueue::OpQueue(int threads) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { loop(); });
}

OpQueue::~OpQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void OpQueue::push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void OpQueue::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return (stopping_ && tasks_.empty()) || (!tasks_.empty() && !running_); });
    if (tasks_.empty()) return;  // stopping and drained
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    running_ = true;
    lock.unlock();
    task();
    lock.lock();
    running_ = false;
    // Wake the other threads even when nothing is queued: the next task then usually starts on
    // a thread that is already awake. Measured, not incidental (see the class comment).
    lock.unlock();
    cv_.notify_all();
    lock.lock();
  }
}

}  // namespace ddp::gloo_backend

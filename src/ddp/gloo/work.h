#pragma once
// The Work handle of one queued operation, and the single worker thread that runs a group's
// operations one after the other in issue order.

#include <ddp/process_group.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ddp::gloo_backend {

class GlooWork : public Work {
 public:
  /// `description` names the operation in wait(timeout) errors ("allreduce #3 (...) on rank 1").
  explicit GlooWork(std::string description);
  /// A Work that is already finished with `error`.
  static std::shared_ptr<GlooWork> failed(std::string description, std::exception_ptr error);

  bool is_completed() override;
  void wait() override;
  void wait(std::chrono::milliseconds timeout) override;
  std::exception_ptr exception() override;

  /// Called once by the worker thread.
  void finish(std::exception_ptr error);

 private:
  std::string description_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

/// One thread running tasks in FIFO order. The destructor runs what is queued, then joins.
class OpQueue {
 public:
  using Task = std::function<void()>;
  OpQueue();
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  /// Tasks must not throw.
  void push(Task task);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ddp::gloo_backend

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
#include <vector>

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

/// Runs tasks one at a time in FIFO order, on a small pool of threads (a task starts only after
/// the one before it returned). The destructor runs what is queued, then joins.
///
/// Why a pool when one task runs at a time: c10d's Gloo group uses two threads too, and on a busy
/// host (more runnable threads than cores) one thread made every allreduce up to 10x slower in
/// our measurements (bench/allreduce, docs/PERFORMANCE.md). What helps is that the thread that
/// finishes a task wakes the other one; a single thread that spins before sleeping does not.
class OpQueue {
 public:
  using Task = std::function<void()>;
  explicit OpQueue(int threads = 2);
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
  bool running_ = false;  // a task is executing
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ddp::gloo_backend

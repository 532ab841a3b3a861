#pragma once
// One NCCL communicator, nonblocking (so no NCCL call can hang the CPU): creation and every enqueue
// are polled with a deadline, and abort() can be requested from another thread (the watchdog).
//
// Thread rules: the issuing thread holds lock() around NCCL calls; the watchdog uses try_* calls,
// which skip when the issuing thread is inside NCCL. After abort the handle is gone and every call
// throws.

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace ddp::nccl_backend {

class Communicator {
 public:
  /// ncclCommInitRankConfig on the current device; TimeoutError when not done by `timeout`.
  Communicator(const ncclUniqueId& id, int rank, int size, int device, std::chrono::milliseconds timeout);
  /// Finalizes and destroys a healthy communicator (bounded wait), aborts a failed one.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// Held while issuing NCCL calls.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  /// The handle; only valid under lock() and while !aborted().
  ncclComm_t handle() const { return comm_; }

  /// After an NCCL call returned `issued` (with lock() held): waits until the communicator is idle
  /// again (nonblocking calls may return ncclInProgress), throwing on failure, on abort requests and
  /// after `deadline`. `what` names the operation for messages.
  void complete_call(ncclResult_t issued, const std::string& what,
                     std::chrono::steady_clock::time_point deadline);

  /// ncclCommGetAsyncError without waiting for lock(): ncclSuccess when the lock was busy or the
  /// communicator is fine; else the error, with its text in `*text`.
  ncclResult_t try_async_error(std::string* text);
  /// Aborts now when the lock is free, else asks the issuing thread to abort (it polls for this) and
  /// aborts anyway after `grace` if it is stuck. Idempotent.
  void abort(std::chrono::milliseconds grace = std::chrono::seconds(2));
  bool aborted() const { return aborted_.load(); }

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  /// "rank 1 of 4, cuda:1"
  std::string where() const;

 private:
  void abort_locked();

  std::mutex mutex_;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> abort_requested_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  int rank_, size_, device_;
};

}  // namespace ddp::nccl_backend

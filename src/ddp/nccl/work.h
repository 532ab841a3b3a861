#pragma once
// One queued NCCL operation: its completion event on our stream, the tensors it must keep alive
// until that event fires, and its outcome. Shared by the Work handed to the caller and the
// watchdog's pending list.

#include "ddp/nccl/errors.h"

#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ddp::nccl_backend {

class StreamBridge;

class OpState {
 public:
  /// Takes ownership of `done` (recorded on our stream after the collective).
  OpState(std::string description, uint64_t seq, cudaEvent_t done, std::chrono::milliseconds timeout,
          std::vector<at::Tensor> keep_alive);
  ~OpState();
  OpState(const OpState&) = delete;
  OpState& operator=(const OpState&) = delete;

  /// Polls the event. True once the GPU finished it (and then drops the kept tensors).
  bool poll_finished();
  /// The watchdog (or an issue failure) marks the op failed; the first error wins.
  void fail(std::exception_ptr error);
  std::exception_ptr error() const;
  bool finished() const { return finished_.load(); }
  bool timed_out(std::chrono::steady_clock::time_point now) const { return now - started_ > timeout_; }

  /// "allreduce #17"
  const std::string& description() const { return description_; }
  uint64_t seq() const { return seq_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  cudaEvent_t done_event() const { return done_; }

 private:
  std::string description_;
  uint64_t seq_;
  cudaEvent_t done_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::vector<at::Tensor> keep_alive_;
  std::exception_ptr error_;
  std::atomic<bool> finished_{false};
};

/// The Work a caller gets back.
class NcclWork : public Work {
 public:
  /// `bridge` outlives nothing: it is shared with the group. `blocking` makes wait() block the CPU.
  NcclWork(std::shared_ptr<OpState> op, std::shared_ptr<StreamBridge> bridge, bool blocking);

  bool is_completed() override;
  void wait() override;
  void wait(std::chrono::milliseconds timeout) override;
  std::exception_ptr exception() override;

 private:
  void rethrow_if_failed();
  std::shared_ptr<OpState> op_;
  std::shared_ptr<StreamBridge> bridge_;
  bool blocking_;
};

}  // namespace ddp::nccl_backend

// The watchdog: polls the completion events of pending ops and the communicator's asynchronous
// error, and aborts the communicator when an op exceeds its timeout or NCCL reports a failure (the
// only way to unblock kernels waiting for a dead peer). Ops stay listed until their event fires, so
// their tensors are released only when the GPU is done with them.
#include "ddp/nccl/process_group_nccl.h"

#include <ddp/logging.h>

namespace ddp::nccl_backend {
namespace {

constexpr auto kBusyPoll = std::chrono::milliseconds(10);
constexpr auto kIdlePoll = std::chrono::seconds(1);

}  // namespace

void ProcessGroupNccl::watchdog_loop() {
  // Events and the device belong to the group's device; set it once for this thread.
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  while (true) {
    {
      std::unique_lock<std::mutex> lk(pending_mutex_);
      const bool idle = pending_.empty();
      pending_cv_.wait_for(lk, idle ? std::chrono::milliseconds(kIdlePoll) : kBusyPoll,
                           [this, idle] { return stop_ || (idle && !pending_.empty()); });
      if (stop_) return;
    }
    watch_once();
  }
}

void ProcessGroupNccl::watch_once() {
  std::deque<std::shared_ptr<OpState>> snapshot;
  {
    std::lock_guard<std::mutex> lk(pending_mutex_);
    snapshot = pending_;
  }
  const auto now = std::chrono::steady_clock::now();
  std::shared_ptr<OpState> oldest_running;
  for (auto& op : snapshot) {
    if (op->poll_finished()) continue;
    if (!oldest_running) oldest_running = op;
    if (!failed() && op->timed_out(now)) {
      fail(FailureKind::kTimeout,
           "NCCL " + op->description() + " (" + where() + ") did not finish within " +
               std::to_string(op->timeout().count()) +
               " ms (NcclOptions::timeout); the watchdog aborted the communicator and process group nccl is "
               "unusable (a peer stuck or gone? NCCL_DEBUG=INFO tells more)");
    }
  }
  if (!failed()) {
    std::string text;
    ncclResult_t r = comm_->try_async_error(&text);
    if (r != ncclSuccess) {
      std::string during = oldest_running ? "during " + oldest_running->description() : "while idle";
      // A peer or the network (remote/system errors) is retryable; anything else is internal.
      FailureKind kind = classify(r) == FailureKind::kPeer ? FailureKind::kPeer : FailureKind::kInternal;
      fail(kind, "NCCL communicator (" + where() + ") failed " + during + ": " + text +
                     "; the watchdog aborted it and process group nccl is unusable");
    }
  }
  std::lock_guard<std::mutex> lk(pending_mutex_);
  while (!pending_.empty() && pending_.front()->finished()) pending_.pop_front();
  // Ops finish in order on one stream; anything finished behind an unfinished one goes later.
}

}  // namespace ddp::nccl_backend

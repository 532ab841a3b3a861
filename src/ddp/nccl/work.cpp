#include "ddp/nccl/work.h"

#include "ddp/nccl/stream_bridge.h"

#include <ddp/errors.h>

#include <thread>

namespace ddp::nccl_backend {

using Clock = std::chrono::steady_clock;

OpState::OpState(std::string description, uint64_t seq, cudaEvent_t done, std::chrono::milliseconds timeout,
                 std::vector<at::Tensor> keep_alive)
    : description_(std::move(description)),
      seq_(seq),
      done_(done),
      started_(Clock::now()),
      timeout_(timeout),
      keep_alive_(std::move(keep_alive)) {}

OpState::~OpState() {
  // cudaEventDestroy is safe on a pending event (it is released once it completes); it fails
  // harmlessly when the runtime is already unloading at exit.
  if (done_) cudaEventDestroy(done_);
}

bool OpState::poll_finished() {
  if (finished_) return true;
  cudaError_t q = cudaEventQuery(done_);
  if (q == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  if (q != cudaSuccess) {
    cudaGetLastError();
    fail(make_error(FailureKind::kInternal,
                    "NCCL " + description_ + ": cudaEventQuery failed: " + cudaGetErrorName(q) + ": " +
                        cudaGetErrorString(q),
                    -1));
  }
  std::vector<at::Tensor> release;
  {
    std::lock_guard<std::mutex> lk(mutex_);
    release.swap(keep_alive_);
  }
  finished_ = true;
  return true;  // `release` frees the tensors (if last owner) outside the lock
}

void OpState::fail(std::exception_ptr error) {
  std::lock_guard<std::mutex> lk(mutex_);
  if (!error_) error_ = std::move(error);
}

std::exception_ptr OpState::error() const {
  std::lock_guard<std::mutex> lk(mutex_);
  return error_;
}

NcclWork::NcclWork(std::shared_ptr<OpState> op, std::shared_ptr<StreamBridge> bridge, bool blocking)
    : op_(std::move(op)), bridge_(std::move(bridge)), blocking_(blocking) {}

bool NcclWork::is_completed() { return op_->error() != nullptr || op_->poll_finished(); }

std::exception_ptr NcclWork::exception() { return op_->error(); }

void NcclWork::rethrow_if_failed() {
  if (auto e = op_->error()) std::rethrow_exception(e);
}

void NcclWork::wait() {
  if (blocking_) return wait(op_->timeout());
  rethrow_if_failed();
  // Kernels the caller queues from now on run after the collective; the CPU goes on.
  bridge_->caller_wait_for(op_->done_event());
}

void NcclWork::wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (int round = 0; !is_completed(); ++round) {
    if (Clock::now() > deadline)
      throw TimeoutError("NCCL " + op_->description() + " not finished after " +
                         std::to_string(timeout.count()) + " ms of wait (it goes on; the watchdog aborts it after " +
                         std::to_string(op_->timeout().count()) + " ms)");
    if (round < 100) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  rethrow_if_failed();
  bridge_->caller_wait_for(op_->done_event());
}

}  // namespace ddp::nccl_backend

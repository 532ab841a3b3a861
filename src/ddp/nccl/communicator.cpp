#include "ddp/nccl/communicator.h"

#include "ddp/nccl/errors.h"

#include <ddp/logging.h>

#include <cuda_runtime_api.h>

#include <thread>

namespace ddp::nccl_backend {
namespace {

using Clock = std::chrono::steady_clock;

void pause_briefly(int round) {
  // Spin a little (enqueues usually finish in microseconds), then back off to 1 ms.
  if (round < 64) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(round < 1000 ? 50 : 1000));
}

bool cuda_runtime_unloading() {
  // At process exit the CUDA runtime may be torn down before our statics: touching NCCL then crashes.
  int device = 0;
  return cudaGetDevice(&device) == cudaErrorCudartUnloading;
}

}  // namespace

Communicator::Communicator(const ncclUniqueId& id, int rank, int size, int device,
                           std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), device_(device) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  auto lk = lock();
  ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    std::string text = nccl_error_text(r, comm_);
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    aborted_ = true;
    throw_error(classify(r), "NCCL communicator init (" + where() + ") failed: " + text, rank);
  }
  try {
    complete_call(r, "NCCL communicator init", Clock::now() + timeout);
  } catch (...) {
    abort_locked();
    throw;
  }
}

Communicator::~Communicator() {
  auto lk = lock();
  if (aborted_ || !comm_) return;
  if (cuda_runtime_unloading()) return;  // leak: the process is exiting anyway
  if (failed_ || abort_requested_) {
    abort_locked();
    return;
  }
  // Flush outstanding work, then free. Bounded: a dead peer must not hang our exit.
  try {
    ncclResult_t r = ncclCommFinalize(comm_);
    complete_call(r, "NCCL communicator finalize", Clock::now() + std::chrono::seconds(30));
    ncclCommDestroy(comm_);
    comm_ = nullptr;
  } catch (const std::exception& e) {
    DDP_LOG(WARN) << e.what() << "; aborting the communicator instead";
    abort_locked();
  }
}

std::string Communicator::where() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ", cuda:" + std::to_string(device_);
}

void Communicator::complete_call(ncclResult_t issued, const std::string& what, Clock::time_point deadline) {
  if (issued != ncclSuccess && issued != ncclInProgress) {
    if (classify(issued) != FailureKind::kConfig) failed_ = true;  // invalid arguments are harmless
    throw_error(classify(issued), what + " (" + where() + ") failed: " + nccl_error_text(issued, comm_), rank_);
  }
  ncclResult_t state = issued;
  for (int round = 0;; ++round) {
    if (abort_requested_) throw_error(FailureKind::kInternal, what + " (" + where() + ") interrupted: the communicator is being aborted", rank_);
    if (state != ncclInProgress) {
      // A nonblocking call can still report ncclSuccess before the communicator settled: ask.
      ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) state = r;
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        failed_ = true;
        throw_error(classify(state), what + " (" + where() + ") failed: " + nccl_error_text(state, comm_), rank_);
      }
    }
    if (Clock::now() > deadline) {
      failed_ = true;
      throw_error(FailureKind::kTimeout, what + " (" + where() + ") did not complete in time; are all ranks running?", rank_);
    }
    pause_briefly(round);
    state = ncclSuccess;  // re-query at the top
  }
}

ncclResult_t Communicator::try_async_error(std::string* text) {
  std::unique_lock<std::mutex> lk(mutex_, std::try_to_lock);
  if (!lk.owns_lock() || aborted_ || !comm_) return ncclSuccess;
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) state = r;
  if (state == ncclSuccess || state == ncclInProgress) return ncclSuccess;
  *text = nccl_error_text(state, comm_);
  return state;
}

void Communicator::abort(std::chrono::milliseconds grace) {
  abort_requested_ = true;
  auto until = Clock::now() + grace;
  while (true) {
    std::unique_lock<std::mutex> lk(mutex_, std::try_to_lock);
    if (lk.owns_lock()) {
      abort_locked();
      return;
    }
    if (aborted_) return;
    if (Clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The issuing thread is stuck inside NCCL: abort without the lock, as ncclCommAbort is meant to
  // unblock such calls. Whatever it then touches fails and is reported.
  DDP_LOG(WARN) << "aborting NCCL communicator (" << where() << ") while another thread is inside NCCL";
  bool expected = false;
  if (aborted_.compare_exchange_strong(expected, true) && comm_) ncclCommAbort(comm_);
}

void Communicator::abort_locked() {
  bool expected = false;
  if (!aborted_.compare_exchange_strong(expected, true)) return;
  failed_ = true;
  if (comm_ && !cuda_runtime_unloading()) ncclCommAbort(comm_);
  comm_ = nullptr;
}

}  // namespace ddp::nccl_backend

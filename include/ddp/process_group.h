#pragma once
// Collective communication over a fixed group of ranks.
//
// Every operation is asynchronous: it is queued in issue order and returns a Work to wait on.
// Every rank must issue the same operations in the same order with matching shapes and dtypes.
// Unlike c10d, a list of tensors means "each of these tensors" (they may differ in shape and are
// reduced as one fused operation), not one tensor per local device.
//
//   std::vector<at::Tensor> grads = {a, b};
//   pg->allreduce(grads, ddp::AllreduceOptions().op(ddp::ReduceOp::kAvg))->wait();
//   pg->broadcast(params, /*root=*/0)->wait();
//   pg->barrier()->wait();
//
// A failed operation (peer died, timeout) throws ddp::PeerError / ddp::TimeoutError from wait();
// after that the group is unusable and every later operation fails saying so.

#include <ddp/export.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/arg.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace ddp {

enum class ReduceOp { kSum, kAvg, kMin, kMax };

/// "sum", "avg", "min", "max".
DDP_API const char* to_string(ReduceOp op);

/// Handle to one asynchronous operation.
class DDP_API Work {
 public:
  virtual ~Work() = default;
  /// True once the operation finished, successfully or not.
  virtual bool is_completed() = 0;
  /// Blocks until done; rethrows the operation's error (PeerError, TimeoutError, ...).
  virtual void wait() = 0;
  /// As wait(), but throws ddp::TimeoutError when not done within `timeout` (the operation goes on).
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  /// The error the operation ended with, or nullptr.
  virtual std::exception_ptr exception() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

// Options: chained setters as in LibTorch (TORCH_ARG), e.g. AllreduceOptions().op(ReduceOp::kAvg).
struct AllreduceOptions {
  TORCH_ARG(ReduceOp, op) = ReduceOp::kSum;
  /// 0: the group's timeout.
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
};

struct BroadcastOptions {
  TORCH_ARG(int, root) = 0;
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
};

struct ReduceScatterOptions {
  TORCH_ARG(ReduceOp, op) = ReduceOp::kSum;
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
};

struct CollectiveOptions {
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
};

/// A group of `size()` ranks; this process is `rank()`.
class DDP_API ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// "gloo" or "nccl".
  virtual std::string backend_name() const = 0;
  /// Where this group's tensors must live: cpu for Gloo, the group's CUDA device for NCCL.
  virtual c10::Device device() const = 0;

  /// In place: every tensor becomes the reduction of that tensor over all ranks.
  virtual WorkPtr allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts = {}) = 0;
  /// In place: every tensor becomes the root's.
  virtual WorkPtr broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts = {}) = 0;
  WorkPtr broadcast(std::vector<at::Tensor>& tensors, int root) {
    return broadcast(tensors, BroadcastOptions().root(root));
  }
  /// outputs[i] (size() tensors shaped like input) receives rank i's input.
  virtual WorkPtr allgather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                            const CollectiveOptions& opts = {}) = 0;
  /// inputs: size() tensors shaped like output; output = reduction over ranks of inputs[rank()].
  virtual WorkPtr reduce_scatter(at::Tensor& output, std::vector<at::Tensor>& inputs,
                                 const ReduceScatterOptions& opts = {}) = 0;
  virtual WorkPtr barrier(const CollectiveOptions& opts = {}) = 0;

  /// Default timeout of every operation.
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  ProcessGroup(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout) {}
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ddp

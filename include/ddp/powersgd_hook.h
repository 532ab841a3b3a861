#pragma once
// PowerSGD gradient compression as a DistributedDataParallel comm hook: PyTorch's powerSGD_hook
// (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook, the same algorithm in torch 1.13 and
// 2.x) with its PowerSGDState, step for step, so that a C++ run and a Python run given the same
// seed compute the same compressed gradients.
//
//   auto state = std::make_shared<ddp::comm_hooks::PowerSGDState>(
//       pg, ddp::comm_hooks::PowerSGDOptions().matrix_approximation_rank(2).start_iter(1000));
//   model.register_comm_hook(ddp::comm_hooks::powersgd(state));
//
// What one bucket goes through once state->iter() >= start_iter (before that: a plain allreduce,
// divided by the world size first):
//   1. error feedback: the bucket gets this rank's last compression error added;
//   2. each gradient is seen as a matrix [dim0, rest]; those worth compressing (rank r:
//      (rows + cols) * r * min_compression_rate < rows * cols) become P = M Q, the others are
//      allreduced as they are;
//   3. P is allreduced and orthogonalized, Q = M^T P is allreduced and divided by the world size,
//      and M is replaced by P Q^T: a rank-r approximation of the average gradient;
//   4. Q is kept for the next step (warm start), and the error (input - approximation) for step 1.
// Q starts random: numpy's RandomState(random_seed).randint(1e9) seeds LibTorch's generator, as
// torch's hook does, so both start from the same Q.
//
// Step 3 needs the allreduced P before it can compute Q, so a compressed bucket costs two
// collectives; the second is issued when DDP waits for the bucket at the end of backward.

#include <ddp/comm_hooks.h>
#include <ddp/export.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ddp {
namespace comm_hooks {

/// PowerSGDState's hyperparameters, PyTorch's names (start_iter is start_powerSGD_iter).
struct PowerSGDOptions {
  /// r: the rank of the approximation. Higher: more accurate, more bytes (rows + cols) * r.
  TORCH_ARG(int64_t, matrix_approximation_rank) = 1;
  /// Steps of plain allreduce before compression starts (a warm-up; > 1 with error feedback or
  /// warm start, because DDP's buckets are rebuilt after the first step).
  TORCH_ARG(int64_t, start_iter) = 1000;
  /// A matrix is compressed only when that divides its elements on the wire by more than this.
  TORCH_ARG(double, min_compression_rate) = 2;
  /// Add the last step's compression error back before compressing (keeps convergence).
  TORCH_ARG(bool, use_error_feedback) = true;
  /// Start each step's power iteration from the last step's Q instead of a random one.
  TORCH_ARG(bool, warm_start) = true;
  /// Added to column norms in Gram-Schmidt (0: a zero column gives NaN, as in PyTorch).
  TORCH_ARG(double, orthogonalization_epsilon) = 0;
  /// Seed of the random initial Q (the same on every rank: the Qs must agree).
  TORCH_ARG(uint32_t, random_seed) = 0;
};

/// Elements before and after compression, over every compressed step so far (PyTorch's
/// PowerSGDState.compression_stats()).
struct PowerSGDCompressionStats {
  double rate = 0;  ///< numel_before / numel_after (0 before the first compressed step)
  int64_t numel_before = 0;
  int64_t numel_after = 0;
};

/// The hook's state: the options, the step count, the random generator, and per bucket the
/// error feedback and the warm-start P and Q. Each rank has its own (the errors differ by rank).
class DDP_API PowerSGDState {
 public:
  /// ConfigError for a null group, a rank < 1, or start_iter <= 1 with error feedback or warm
  /// start (PyTorch's ValueError).
  PowerSGDState(std::shared_ptr<ProcessGroup> pg, PowerSGDOptions options = {});
  ~PowerSGDState();
  PowerSGDState(const PowerSGDState&) = delete;
  PowerSGDState& operator=(const PowerSGDState&) = delete;

  const PowerSGDOptions& options() const;
  /// Synchronized backward passes seen so far (PyTorch's state.iter).
  int64_t iter() const;
  PowerSGDCompressionStats compression_stats() const;

  /// Everything a resumed run needs to continue exactly, as named CPU tensors: the step count,
  /// the generator, and per bucket the error, P and Q. For checkpoints; per rank.
  std::vector<std::pair<std::string, at::Tensor>> state_tensors() const;
  /// Restores what state_tensors() returned. DataError naming the entry when one is missing or
  /// malformed. Call before the first backward after a resume. Without `keep_error_feedback` the
  /// errors are dropped (a state saved by another rank or world size: its errors are not this
  /// rank's), and the step count, the generator, P and Q are kept (they are the same on every rank).
  void load_state_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                          bool keep_error_feedback = true);

  struct Impl;

 private:
  friend DDP_API CommHook powersgd(std::shared_ptr<PowerSGDState> state);
  std::shared_ptr<Impl> impl_;
};

/// The comm hook; every rank registers one with its own state.
DDP_API CommHook powersgd(std::shared_ptr<PowerSGDState> state);

}  // namespace comm_hooks
}  // namespace ddp

#pragma once
// --comm-hook: how a trainer's DistributedDataParallel reduces its gradients, and what of that a
// checkpoint must carry.
//
//   none          DDP's own allreduce (the default)
//   fp16, bf16    the compression hooks of ddp/comm_hooks.h
//   powersgd:R    ddp::comm_hooks::powersgd with matrix_approximation_rank R, after
//                 --powersgd-start-iter plain steps (PyTorch's default 1000); its state (step count,
//                 generator, per-rank error feedback, warm-start P and Q) goes into every checkpoint
//                 and comes back on resume, with DDP's bucket layout: the state is kept per bucket,
//                 and a new DDP would start on its initial buckets, not the rebuilt ones
//
//   CommHookChoice hook(options.runtime.comm_hook(), pg, checkpointer);   // before resume()
//   ddp::DistributedDataParallel<Model> model(net, pg);
//   hook.install(model);

#include <ddp/checkpoint.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/powersgd_hook.h>
#include <ddp/process_group.h>

#include <memory>
#include <vector>

#include "trainer/comm_hook_setting.h"

namespace ddp::trainer {

/// DDP's bucket layout (bucket_indices()) as one int64 tensor for a checkpoint: [buckets, the size
/// of each, the indices of each in turn].
at::Tensor bucket_layout_tensor(const std::vector<std::vector<int64_t>>& buckets);
/// Back from such a tensor; DataError when it is not one (wrong dtype or shape, sizes that do not
/// add up). Whether it fits the model is set_bucket_indices()'s check.
std::vector<std::vector<int64_t>> bucket_layout_from(const at::Tensor& t);

class CommHookChoice {
 public:
  /// Makes the hook's state and, for PowerSGD, registers it with `checkpointer` (so call this
  /// before checkpointer.resume()).
  CommHookChoice(CommHookSetting setting, std::shared_ptr<ProcessGroup> pg, Checkpointer& checkpointer);
  CommHookChoice(const CommHookChoice&) = delete;  // the checkpointer holds callbacks into this object
  CommHookChoice& operator=(const CommHookChoice&) = delete;
  /// Registers the hook on `model` (nothing for "none"), and gives it the buckets of a resumed
  /// checkpoint. `model` must outlive this object's use by the checkpointer.
  void install(DistributedDataParallelBase& model);
  const CommHookSetting& setting() const { return setting_; }
  /// The PowerSGD state, or null.
  const std::shared_ptr<comm_hooks::PowerSGDState>& powersgd() const { return powersgd_; }

 private:
  CommHookSetting setting_;
  std::shared_ptr<ProcessGroup> pg_;
  std::shared_ptr<comm_hooks::PowerSGDState> powersgd_;
  DistributedDataParallelBase* model_ = nullptr;
  std::vector<std::vector<int64_t>> resumed_buckets_;  // from a checkpoint loaded before install()
};

}  // namespace ddp::trainer

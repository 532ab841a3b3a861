#pragma once
// ZeroRedundancyOptimizer: optimizer state sharded across the ranks (ZeRO stage 1), PyTorch's
// torch.distributed.optim.ZeroRedundancyOptimizer for LibTorch optimizers.
//
//   ddp::DistributedDataParallel model(net, pg);
//   ddp::ZeroRedundancyOptimizer opt(net->parameters(), [](auto groups) {
//     return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(1e-3));
//   }, pg);
//   model(x).sum().backward();   // every rank has every averaged gradient (DDP)
//   opt.step();                  // each rank updates its shard; the shards are broadcast
//
// Each parameter belongs to one rank, chosen as PyTorch does (parameters sorted by size, largest
// first, each given to the rank with the fewest elements so far, ties to the lowest rank; one count
// across all groups), so a rank keeps about 1/N of the optimizer state (Adam: two tensors per
// parameter). step() runs the wrapped optimizer on this rank's shard only, then every rank
// broadcasts the parameters it owns (one flat broadcast per rank). The updates are the wrapped
// optimizer's own, parameter by parameter, so the weights equal a plain optimizer's bit for bit.
//
// It is a torch::optim::Optimizer: param_groups() are all parameters' groups, with the wrapped
// optimizer's options (change lr there; step() hands the options to the shard's optimizer), and
// state() stays empty. Checkpoints: ddp::Checkpointer::save() consolidates the shards on rank 0
// and writes exactly what the plain optimizer would write, and load() takes this rank's shard out
// of such a file, so a checkpoint moves freely between ZeRO and plain runs and across world sizes.
// By hand: consolidate_state_dict(to) on every rank, then save() on rank `to`.
//
// Needs every parameter on one device with one dtype (ConfigError naming the first that differs),
// like PyTorch's. Collective: construction does not communicate, step() and
// consolidate_state_dict() do, on every rank in the same order.

#include <ddp/export.h>

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace c10 {
struct IValue;
}  // namespace c10

namespace ddp {

class ProcessGroup;

class DDP_API ZeroRedundancyOptimizer : public torch::optim::Optimizer {
 public:
  /// Builds the wrapped optimizer over the parameter groups it is given (the groups keep their
  /// options where they have them). Called once for this rank's shard, once for the whole model
  /// (its options and, when saving or loading, its state format), and per rank when consolidating.
  using OptimizerFactory =
      std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::optim::OptimizerParamGroup>)>;

  ZeroRedundancyOptimizer(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                          OptimizerFactory make_optimizer, std::shared_ptr<ProcessGroup> pg);
  ZeroRedundancyOptimizer(std::vector<at::Tensor> params, OptimizerFactory make_optimizer,
                          std::shared_ptr<ProcessGroup> pg);
  ~ZeroRedundancyOptimizer() override;

  /// The wrapped optimizer's step on this rank's shard (with `closure` when given), then every
  /// shard broadcast from its owner. Collective. Returns the closure's loss (undefined without).
  /// ConfigError when param_groups() changed since construction (add_param_group is not followed).
  at::Tensor step(LossClosure closure = nullptr) override;

  /// Gathers every rank's optimizer state on rank `to`, which can then save() until the next
  /// step(). Collective. ConfigError for a rank outside the group.
  void consolidate_state_dict(int to = 0);
  /// The whole optimizer state in the wrapped optimizer's own format, what it would save without
  /// ZeRO. Needs consolidate_state_dict(this rank) since the last step() (ConfigError otherwise).
  void save(torch::serialize::OutputArchive& archive) const override;
  /// Loads a whole optimizer state (save()'s, or the plain optimizer's) and keeps this rank's part.
  /// Local: every rank loads the same file. As LibTorch's own load(), the options stay as they are.
  void load(torch::serialize::InputArchive& archive) override;

  /// For each parameter, in param_groups() order (group by group), the rank that updates it.
  const std::vector<int>& owners() const;
  /// The optimizer over this rank's shard: param_groups() restricted to the shard, each group's
  /// parameters in PyTorch's shard order (largest first).
  torch::optim::Optimizer& local_optimizer();
  const torch::optim::Optimizer& local_optimizer() const;
  /// The whole model's optimizer holding the consolidated state: ConfigError as save() gives when
  /// this rank holds none.
  const torch::optim::Optimizer& consolidated_optimizer() const;

 private:
  ZeroRedundancyOptimizer(std::unique_ptr<torch::optim::Optimizer> whole, OptimizerFactory make_optimizer,
                          std::shared_ptr<ProcessGroup> pg);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Bytes of the tensors an optimizer keeps as state (SGD, Adam, AdamW, Adagrad, RMSprop; for a
/// ZeroRedundancyOptimizer, this rank's shard). ConfigError naming any other state type.
DDP_API int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

/// The optimizer's state as PyTorch's `Optimizer.state_dict()` lays it out, for Python:
/// {"state": {index: {name: tensor}}, "param_groups": [{option: value, ..., "params": [index]}]},
/// indices counting the parameters group by group. `torch::pickle_save(torch_state_dict(opt))`
/// writes a file that `torch.load` reads and torch's optimizer, or its ZeroRedundancyOptimizer over
/// the same groups, loads with `load_state_dict`. For SGD and Adam / AdamW (PyTorch's names: Adam's
/// "step" a float tensor, "betas" a tuple, "maximize" false); a ZeroRedundancyOptimizer gives its
/// consolidated state (after consolidate_state_dict to this rank). ConfigError for other optimizers.
DDP_API c10::IValue torch_state_dict(const torch::optim::Optimizer& optimizer);

}  // namespace ddp

#pragma once
// SyncBatchNorm: batch normalisation whose batch statistics are those of the whole group's batch
// (PyTorch's torch.nn.SyncBatchNorm), for models whose per-rank batches are too small for good
// statistics.
//
//   auto bn = ddp::SyncBatchNorm(torch::nn::BatchNormOptions(64), pg);
//   at::Tensor y = bn(x);            // x: [N, C, ...]; in training, normalised with the mean and
//                                    // variance over every rank's N (ranks' N may differ)
//
// In training each forward allgathers every rank's per-channel mean, variance and count, and each
// backward allreduces two per-channel sums, so (like every collective) every rank must run forward
// and backward through its SyncBatchNorm layers equally often and in the same order. In eval mode
// with running statistics, or in a group of one, it is exactly torch::nn::BatchNorm (no
// communication). The parameters and buffers have BatchNorm's names (weight, bias, running_mean,
// running_var, num_batches_tracked), so state dicts move between the two.
//
// C++ cannot swap a module that a parent holds as a typed member, so there is no
// convert_sync_batchnorm: a model chooses its norm layer when it is built (ddp's ResNet takes
// ResNetOptions::sync_bn_group). docs/DDP.md, "SyncBatchNorm", has what differs from PyTorch.

#include <ddp/export.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/options/batchnorm.h>
#include <torch/nn/pimpl.h>

#include <memory>

namespace ddp {

class DDP_API SyncBatchNormImpl : public torch::nn::Module {
 public:
  /// `group` null: no synchronisation (plain BatchNorm), as with a group of one.
  SyncBatchNormImpl(const torch::nn::BatchNormOptions& options, std::shared_ptr<ProcessGroup> group);

  /// [N, C, ...] -> same shape. Throws ddp::ConfigError for a bad shape, and when training with
  /// one value per channel in the whole group.
  at::Tensor forward(const at::Tensor& input);

  const torch::nn::BatchNormOptions& options() const { return options_; }
  const std::shared_ptr<ProcessGroup>& group() const { return group_; }

  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  torch::nn::BatchNormOptions options_;
  std::shared_ptr<ProcessGroup> group_;
};

TORCH_MODULE(SyncBatchNorm);

}  // namespace ddp

#pragma once
// ResNet-18/34/50 with torchvision's module names, so a state_dict converted from torchvision loads
// by name (see models/state_dict.h and docs/RANZCR.md):
//   conv1, bn1, relu, maxpool, layer1..layer4 (BasicBlock / Bottleneck: conv1, bn1, conv2, bn2
//   [, conv3, bn3], downsample.0 / downsample.1), avgpool, fc.
//
//   using namespace ddp::models;
//   ResNet net(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));  // RANZCR X-rays
//   ResNet cifar(ResNetOptions(ResNetArch::kResNet18).num_classes(10).cifar_stem(true));  // CIFAR
//   at::Tensor logits = net->forward(images);                        // [N, num_classes]

#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/classifier.h"

namespace ddp::models {

enum class ResNetArch { kResNet18, kResNet34, kResNet50 };

/// "resnet18" | "resnet34" | "resnet50" -> arch; ddp::ConfigError naming the value otherwise.
ResNetArch parse_resnet_arch(const std::string& name);
std::string to_string(ResNetArch arch);

struct ResNetOptions {
  explicit ResNetOptions(ResNetArch arch = ResNetArch::kResNet18) : arch_(arch) {}

  TORCH_ARG(ResNetArch, arch);
  /// Image channels at the stem (1 for grayscale X-rays, 3 for RGB).
  TORCH_ARG(int64_t, in_channels) = 3;
  /// Outputs of the final fully connected layer `fc`.
  TORCH_ARG(int64_t, num_classes) = 1000;
  /// CIFAR stem: conv1 is 3x3 stride 1 padding 1 and there is no max-pool (for 32x32 inputs).
  TORCH_ARG(bool, cifar_stem) = false;
  /// Zero-initialise the last BN of every residual branch (torchvision's zero_init_residual).
  TORCH_ARG(bool, zero_init_residual) = false;
  /// Non-null: every BatchNorm is a ddp::SyncBatchNorm over this group (statistics of the whole
  /// group's batch in training; the same names and shapes, so state dicts load either way).
  TORCH_ARG(std::shared_ptr<ddp::ProcessGroup>, sync_bn_group) = nullptr;
};

class ResNetImpl : public Classifier {
 public:
  explicit ResNetImpl(const ResNetOptions& options = ResNetOptions());

  /// [N, in_channels, H, W] -> logits [N, num_classes].
  at::Tensor forward(const at::Tensor& x) override;
  /// Pooled features before `fc`: [N, feature_dim()].
  at::Tensor features(const at::Tensor& x);
  /// 512 for ResNet-18/34, 2048 for ResNet-50.
  int64_t feature_dim() const;

  /// Parameters of the head (`fc`) and of everything else.
  std::vector<at::Tensor> head_parameters();
  std::vector<at::Tensor> backbone_parameters();
  /// requires_grad on every backbone parameter (false: train the head only, as the seed's
  /// `--freeze-backbone`). BatchNorm running statistics still follow train()/eval().
  void set_backbone_trainable(bool trainable);

  const ResNetOptions& options() const { return options_; }

 private:
  struct Layers;
  ResNetOptions options_;
  std::shared_ptr<Layers> layers_;
};

TORCH_MODULE(ResNet);

}  // namespace ddp::models

#pragma once
// Every model a trainer can train, built by name, so adding a model is one entry here:
//   net        the seed's CIFAR-10 CNN (models/cifar_net.h): 3x32x32 images, 10 classes only
//   resnet18, resnet34, resnet50   torchvision's ResNets (models/resnet.h), any channels and classes;
//              small_images: the CIFAR stem for 32x32 inputs
//
//   auto built = ddp::models::make_model(ModelOptions("resnet18").in_channels(1).num_classes(11)
//                                            .pretrained("resnet18_1ch.pt").freeze_backbone(true));
//   DDP_LOG(INFO) << built.pretrained->summary();
//   ddp::DistributedDataParallel<std::shared_ptr<Classifier>> model(built.module, pg);
//
// The construction draws from torch's default generator in the same order as constructing the
// concrete module directly, so a seeded run initialises the same weights.

#include <ddp/process_group.h>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/classifier.h"
#include "models/state_dict.h"

namespace ddp::models {

struct ModelOptions {
  explicit ModelOptions(std::string name = "net") : name_(std::move(name)) {}

  /// One of model_names().
  TORCH_ARG(std::string, name);
  /// Image channels.
  TORCH_ARG(int64_t, in_channels) = 3;
  /// Outputs (logits) per image.
  TORCH_ARG(int64_t, num_classes) = 10;
  /// 32x32 inputs: a ResNet gets the CIFAR stem (3x3 conv1, no max-pool).
  TORCH_ARG(bool, small_images) = false;
  /// A state_dict file (torch.save) loaded over the initial weights: the head (fc.) is kept when its
  /// shape differs, an RGB stem is averaged into a 1-channel one (load_state_dict()). Empty: none.
  TORCH_ARG(std::string, pretrained);
  /// Train the head only (ResNets: every parameter but fc's has requires_grad false).
  TORCH_ARG(bool, freeze_backbone) = false;
  /// Non-null: a ResNet's BatchNorms are ddp::SyncBatchNorm over this group. net has none: ConfigError.
  TORCH_ARG(std::shared_ptr<ddp::ProcessGroup>, sync_bn_group) = nullptr;
};

struct BuiltModel {
  std::shared_ptr<Classifier> module;                 ///< on the CPU
  std::optional<LoadStateDictReport> pretrained;      ///< what --pretrained loaded, when given
};

/// The names make_model() knows, in the order listed above.
std::vector<std::string> model_names();

/// Builds the model. ConfigError naming the name (unknown model, or options the model cannot
/// take: net with other channels or classes, or freeze_backbone); DataError from the pretrained file.
BuiltModel make_model(const ModelOptions& options);

}  // namespace ddp::models

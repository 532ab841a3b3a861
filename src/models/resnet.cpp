// ResNet-18/34/50 laid out exactly like torchvision.models.resnet (v1.5: the stride of a Bottleneck
// sits on its 3x3 conv), so parameter and buffer names and shapes match torchvision's state_dict.
#include "models/resnet.h"

#include <ddp/errors.h>
#include <ddp/sync_batch_norm.h>

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <sstream>

namespace ddp::models {
namespace nn = torch::nn;

ResNetArch parse_resnet_arch(const std::string& name) {
  if (name == "resnet18") return ResNetArch::kResNet18;
  if (name == "resnet34") return ResNetArch::kResNet34;
  if (name == "resnet50") return ResNetArch::kResNet50;
  throw ddp::ConfigError("unknown ResNet architecture '" + name +
                         "' (expected resnet18, resnet34 or resnet50)");
}

std::string to_string(ResNetArch arch) {
  switch (arch) {
    case ResNetArch::kResNet18: return "resnet18";
    case ResNetArch::kResNet34: return "resnet34";
    case ResNetArch::kResNet50: return "resnet50";
  }
  return "resnet?";
}

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

// The norm layer everywhere in the net: BatchNorm2d, or SyncBatchNorm over the group when one is given
// (same parameter and buffer names, so checkpoints and torchvision weights load either way).
nn::AnyModule norm2d(int64_t features, const std::shared_ptr<ddp::ProcessGroup>& sync_group) {
  if (sync_group) return nn::AnyModule(ddp::SyncBatchNorm(nn::BatchNormOptions(features), sync_group));
  return nn::AnyModule(nn::BatchNorm2d(features));
}

// One residual block: BasicBlock (two 3x3 convs) or Bottleneck (1x1, 3x3, 1x1 with 4x expansion).
// Names follow torchvision: conv1 bn1 conv2 bn2 [conv3 bn3] [downsample.0 downsample.1].
class ResidualBlockImpl : public nn::Module {
 public:
  ResidualBlockImpl(int64_t in_planes, int64_t planes, int64_t stride, bool bottleneck,
                    const std::shared_ptr<ddp::ProcessGroup>& sync_group)
      : bottleneck_(bottleneck) {
    auto norm = [&](const char* name, int64_t features) {
      nn::AnyModule m = norm2d(features, sync_group);
      register_module(name, m.ptr());
      return m;
    };
    const int64_t out_planes = planes * (bottleneck ? 4 : 1);
    if (bottleneck) {
      conv1_ = register_module("conv1", conv(in_planes, planes, 1, 1, 0));
      bn1_ = norm("bn1", planes);
      conv2_ = register_module("conv2", conv(planes, planes, 3, stride, 1));
      bn2_ = norm("bn2", planes);
      conv3_ = register_module("conv3", conv(planes, out_planes, 1, 1, 0));
      bn3_ = norm("bn3", out_planes);
    } else {
      conv1_ = register_module("conv1", conv(in_planes, planes, 3, stride, 1));
      bn1_ = norm("bn1", planes);
      conv2_ = register_module("conv2", conv(planes, planes, 3, 1, 1));
      bn2_ = norm("bn2", planes);
    }
    relu_ = register_module("relu", nn::ReLU(nn::ReLUOptions(true)));
    if (stride != 1 || in_planes != out_planes) {
      downsample_ = register_module(
          "downsample", nn::Sequential(conv(in_planes, out_planes, 1, stride, 0), norm2d(out_planes, sync_group)));
    }
  }

  at::Tensor forward(at::Tensor x) {
    at::Tensor identity = downsample_ ? downsample_->forward(x) : x;
    at::Tensor out = relu_(bn1_.forward(conv1_(x)));
    out = bn2_.forward(conv2_(out));
    if (bottleneck_) out = bn3_.forward(conv3_(relu_(out)));
    out = out + identity;
    return relu_(out);
  }

  /// The weight of the BN that zero_init_residual sets to 0 (last of the residual branch).
  at::Tensor last_bn_weight() { return (bottleneck_ ? bn3_ : bn2_).ptr()->named_parameters()["weight"]; }

 private:
  bool bottleneck_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  nn::AnyModule bn1_, bn2_, bn3_;
  nn::ReLU relu_{nullptr};
  nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResidualBlock);

struct ArchSpec {
  std::vector<int64_t> blocks;
  bool bottleneck;
};

ArchSpec spec_for(ResNetArch arch) {
  switch (arch) {
    case ResNetArch::kResNet18: return {{2, 2, 2, 2}, false};
    case ResNetArch::kResNet34: return {{3, 4, 6, 3}, false};
    case ResNetArch::kResNet50: return {{3, 4, 6, 3}, true};
  }
  return {{2, 2, 2, 2}, false};
}

}  // namespace

struct ResNetImpl::Layers {
  nn::Conv2d conv1{nullptr};
  nn::AnyModule bn1;
  nn::ReLU relu{nullptr};
  nn::MaxPool2d maxpool{nullptr};  // null with the CIFAR stem
  nn::Sequential layer[4] = {nn::Sequential(nullptr), nn::Sequential(nullptr),
                             nn::Sequential(nullptr), nn::Sequential(nullptr)};
  nn::AdaptiveAvgPool2d avgpool{nullptr};
  nn::Linear fc{nullptr};
  int64_t feature_dim = 0;
};

ResNetImpl::ResNetImpl(const ResNetOptions& options)
    : options_(options), layers_(std::make_shared<Layers>()) {
  if (options.in_channels() < 1) {
    throw ddp::ConfigError("ResNet in_channels must be >= 1, got " +
                           std::to_string(options.in_channels()));
  }
  if (options.num_classes() < 1) {
    throw ddp::ConfigError("ResNet num_classes must be >= 1, got " +
                           std::to_string(options.num_classes()));
  }
  Layers& L = *layers_;
  const ArchSpec spec = spec_for(options.arch());
  L.conv1 = register_module("conv1", options.cifar_stem() ? conv(options.in_channels(), 64, 3, 1, 1)
                                                          : conv(options.in_channels(), 64, 7, 2, 3));
  L.bn1 = norm2d(64, options.sync_bn_group());
  register_module("bn1", L.bn1.ptr());
  L.relu = register_module("relu", nn::ReLU(nn::ReLUOptions(true)));
  if (!options.cifar_stem()) {
    L.maxpool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  }
  int64_t in_planes = 64;
  const int64_t planes[4] = {64, 128, 256, 512};
  for (int i = 0; i < 4; ++i) {
    nn::Sequential layer;
    for (int64_t b = 0; b < spec.blocks[i]; ++b) {
      const int64_t stride = (b == 0 && i > 0) ? 2 : 1;
      layer->push_back(ResidualBlock(in_planes, planes[i], stride, spec.bottleneck, options.sync_bn_group()));
      in_planes = planes[i] * (spec.bottleneck ? 4 : 1);
    }
    L.layer[i] = register_module("layer" + std::to_string(i + 1), layer);
  }
  L.avgpool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions(1)));
  L.feature_dim = in_planes;
  L.fc = register_module("fc", nn::Linear(in_planes, options.num_classes()));

  // torchvision's initialisation: He-normal (fan_out) convs, BN weight 1 / bias 0; fc keeps the
  // default nn.Linear initialisation.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    } else if (auto* sbn = m->as<ddp::SyncBatchNormImpl>()) {
      nn::init::ones_(sbn->weight);
      nn::init::zeros_(sbn->bias);
    }
  }
  if (options.zero_init_residual()) {
    for (auto& layer : L.layer) {
      for (auto& child : layer->children()) {
        if (auto* block = child->as<ResidualBlockImpl>()) nn::init::zeros_(block->last_bn_weight());
      }
    }
  }
}

at::Tensor ResNetImpl::features(const at::Tensor& input) {
  if (input.dim() != 4 || input.size(1) != options_.in_channels()) {
    std::ostringstream msg;
    msg << "ResNet expects input [N, " << options_.in_channels() << ", H, W], got " << input.sizes();
    throw ddp::ConfigError(msg.str());
  }
  Layers& L = *layers_;
  at::Tensor x = L.relu(L.bn1.forward(L.conv1(input)));
  if (!L.maxpool.is_empty()) x = L.maxpool(x);
  for (auto& layer : L.layer) x = layer->forward(x);
  return L.avgpool(x).flatten(1);
}

at::Tensor ResNetImpl::forward(const at::Tensor& x) { return layers_->fc(features(x)); }

int64_t ResNetImpl::feature_dim() const { return layers_->feature_dim; }

std::vector<at::Tensor> ResNetImpl::head_parameters() { return layers_->fc->parameters(); }

std::vector<at::Tensor> ResNetImpl::backbone_parameters() {
  std::vector<at::Tensor> out;
  for (const auto& item : named_parameters()) {
    if (item.key().rfind("fc.", 0) != 0) out.push_back(item.value());
  }
  return out;
}

void ResNetImpl::set_backbone_trainable(bool trainable) {
  for (auto& p : backbone_parameters()) p.set_requires_grad(trainable);
}

}  // namespace ddp::models

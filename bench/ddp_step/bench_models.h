#pragma once
// The benchmark's models, defined here so the benchmark does not depend on the models library.
// pytorch_ddp_step.py builds the same ones in Python (torchvision's resnet18 for ResNet-18).
#include <torch/torch.h>

namespace ddp::bench {

/// The CIFAR-10 tutorial net: conv 3->6 k5, maxpool 2, conv 6->16 k5, fc 400->120->84->10.
struct CifarNetImpl : torch::nn::Module {
  CifarNetImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(3, 6, 5));
    conv2 = register_module("conv2", torch::nn::Conv2d(6, 16, 5));
    fc1 = register_module("fc1", torch::nn::Linear(400, 120));
    fc2 = register_module("fc2", torch::nn::Linear(120, 84));
    fc3 = register_module("fc3", torch::nn::Linear(84, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = x.flatten(1);
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(CifarNet);

inline torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

/// torchvision's BasicBlock.
struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    conv1 = register_module("conv1", conv3x3(in, out, stride));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(out));
    conv2 = register_module("conv2", conv3x3(out, out, 1));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                                torch::nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto identity = downsample ? downsample->forward(x) : x;
    auto out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    return torch::relu(out + identity);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

/// torchvision's resnet18 (11.2M parameters with 10 classes), with the CIFAR stem (3x3 stride-1
/// conv1, no max-pool) for 32x32 inputs.
struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int64_t classes = 10) {
    conv1 = register_module("conv1", conv3x3(3, 64, 1));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
    int64_t in = 64;
    const int64_t widths[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; ++i) {
      torch::nn::Sequential layer;
      layer->push_back(BasicBlock(in, widths[i], i == 0 ? 1 : 2));
      layer->push_back(BasicBlock(widths[i], widths[i], 1));
      layers.push_back(register_module("layer" + std::to_string(i + 1), layer));
      in = widths[i];
    }
    fc = register_module("fc", torch::nn::Linear(512, classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));
    for (auto& layer : layers) x = layer->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  std::vector<torch::nn::Sequential> layers;
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace ddp::bench

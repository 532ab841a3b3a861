#pragma once
// Small models for the DDP tests. Names match tests/ddp/python/models.py, which defines the same
// models for the comparison with PyTorch's DistributedDataParallel.
#include <torch/torch.h>

namespace ddp::testing {

/// 20 -> 32 -> 32 -> 10.
struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(20, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 32));
    fc3 = register_module("fc3", torch::nn::Linear(32, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(Mlp);

/// The CIFAR-10 tutorial net (3x32x32 -> 10), optionally with BatchNorm after each conv.
struct CnnImpl : torch::nn::Module {
  explicit CnnImpl(bool batch_norm = false) : batch_norm(batch_norm) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 5)));
    if (batch_norm) bn1 = register_module("bn1", torch::nn::BatchNorm2d(6));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
    if (batch_norm) bn2 = register_module("bn2", torch::nn::BatchNorm2d(16));
    fc1 = register_module("fc1", torch::nn::Linear(400, 120));
    fc2 = register_module("fc2", torch::nn::Linear(120, 84));
    fc3 = register_module("fc3", torch::nn::Linear(84, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = conv1(x);
    if (batch_norm) x = bn1(x);
    x = torch::max_pool2d(torch::relu(x), 2);
    x = conv2(x);
    if (batch_norm) x = bn2(x);
    x = torch::max_pool2d(torch::relu(x), 2);
    x = x.flatten(1);
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  bool batch_norm;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(Cnn);

}  // namespace ddp::testing

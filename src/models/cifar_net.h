#pragma once
// The seed's CIFAR-10 network (the PyTorch tutorial Net), same module names and parameter shapes,
// so a state dict moves between this and Python's Net unchanged:
//   conv1 Conv2d(3, 6, 5) -> relu -> pool MaxPool2d(2, 2) -> conv2 Conv2d(6, 16, 5) -> relu -> pool
//   -> flatten (16*5*5) -> fc1 Linear(400, 120) -> relu -> fc2 Linear(120, 84) -> relu -> fc3 Linear(84, 10)
// 62,006 parameters. forward() returns logits.
//
//   ddp::models::CifarNet net;                       // fast CPU kernels on (see CifarNetOptions)
//   torch::Tensor logits = net->forward(images);     // images: float [N, 3, 32, 32]

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

namespace ddp::models {

struct CifarNetOptions {
  /// On CPU, compute relu+max-pool as one fused kernel and the Linear layers through oneDNN (as 1x1
  /// convolutions) instead of the BLAS path. Same results up to float rounding; much faster where
  /// LibTorch links a reference BLAS (Debian). Off: the plain LibTorch ops, exactly as in Python.
  CifarNetOptions& fast_cpu_kernels(bool v) {
    fast_cpu_kernels_ = v;
    return *this;
  }
  bool fast_cpu_kernels() const { return fast_cpu_kernels_; }

 private:
  bool fast_cpu_kernels_ = true;
};

class CifarNetImpl : public torch::nn::Module {
 public:
  explicit CifarNetImpl(CifarNetOptions options = {});
  torch::Tensor forward(torch::Tensor x);

  const CifarNetOptions& options() const { return options_; }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::MaxPool2d pool{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};

 private:
  CifarNetOptions options_;
};
TORCH_MODULE(CifarNet);

}  // namespace ddp::models

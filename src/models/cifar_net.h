#pragma once
// The seed's CIFAR-10 network (the PyTorch tutorial Net), same module names and parameter shapes,
// so a state dict moves between this and Python's Net unchanged:
//   conv1 Conv2d(3, 6, 5) -> relu -> pool MaxPool2d(2, 2) -> conv2 Conv2d(6, 16, 5) -> relu -> pool
//   -> flatten (16*5*5) -> fc1 Linear(400, 120) -> relu -> fc2 Linear(120, 84) -> relu -> fc3 Linear(84, 10)
// 62,006 parameters. forward() returns logits.
//
// The forward pass is Python's, op for op (a hand-fused ReLU + max-pool and oneDNN Linear layers
// were faster only with the reference BLAS; with OpenBLAS LibTorch's own ops win: PERFORMANCE.md).
//
//   ddp::models::CifarNet net;
//   torch::Tensor logits = net->forward(images);     // images: float [N, 3, 32, 32]

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include "models/classifier.h"

namespace ddp::models {

class CifarNetImpl : public Classifier {
 public:
  CifarNetImpl();
  at::Tensor forward(const at::Tensor& images) override;

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::MaxPool2d pool{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(CifarNet);

}  // namespace ddp::models

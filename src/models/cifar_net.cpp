#include "models/cifar_net.h"

#include <torch/nn/functional/activation.h>

namespace ddp::models {

CifarNetImpl::CifarNetImpl() {
  // Registration order = Python's attribute order, so parameters() and named_parameters() line up.
  conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 5)));
  pool = register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
  conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
  fc1 = register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120));
  fc2 = register_module("fc2", torch::nn::Linear(120, 84));
  fc3 = register_module("fc3", torch::nn::Linear(84, 10));
}

at::Tensor CifarNetImpl::forward(const at::Tensor& images) {
  namespace F = torch::nn::functional;
  at::Tensor x = pool->forward(F::relu(conv1->forward(images)));
  x = pool->forward(F::relu(conv2->forward(x)));
  x = x.view({-1, 16 * 5 * 5});
  x = F::relu(fc1->forward(x));
  x = F::relu(fc2->forward(x));
  return fc3->forward(x);
}

}  // namespace ddp::models

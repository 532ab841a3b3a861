#include "models/cifar_net.h"

#include <torch/nn/functional/activation.h>

#include "models/cpu_fast_ops.h"

namespace ddp::models {

CifarNetImpl::CifarNetImpl(CifarNetOptions options) : options_(options) {
  // Registration order = Python's attribute order, so parameters() and named_parameters() line up.
  conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 5)));
  pool = register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
  conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
  fc1 = register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120));
  fc2 = register_module("fc2", torch::nn::Linear(120, 84));
  fc3 = register_module("fc3", torch::nn::Linear(84, 10));
}

torch::Tensor CifarNetImpl::forward(torch::Tensor x) {
  namespace F = torch::nn::functional;
  if (options_.fast_cpu_kernels() && x.device().is_cpu()) {
    x = relu_max_pool2x2(conv1->forward(x));
    x = relu_max_pool2x2(conv2->forward(x));
    x = x.reshape({-1, 16 * 5 * 5});
    x = F::relu(linear_onednn(x, fc1->weight, fc1->bias));
    x = F::relu(linear_onednn(x, fc2->weight, fc2->bias));
    return linear_onednn(x, fc3->weight, fc3->bias);
  }
  x = pool->forward(F::relu(conv1->forward(x)));
  x = pool->forward(F::relu(conv2->forward(x)));
  x = x.view({-1, 16 * 5 * 5});
  x = F::relu(fc1->forward(x));
  x = F::relu(fc2->forward(x));
  return fc3->forward(x);
}

}  // namespace ddp::models

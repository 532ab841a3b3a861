#pragma once
// CPU kernels for small networks that avoid LibTorch's slow paths on a reference-BLAS build.
//
//   torch::Tensor y = ddp::models::relu_max_pool2x2(x);        // == max_pool2d(relu(x), 2, 2)
//   torch::Tensor z = ddp::models::linear_onednn(y, fc->weight, fc->bias);   // == linear(y, w, b)
//
// Both are differentiable and fall back to the standard ops when their fast path does not apply
// (non-float or non-CPU tensors, odd sizes, LibTorch without oneDNN).

#include <ATen/core/Tensor.h>

namespace ddp::models {

/// max_pool2d(relu(x), kernel 2, stride 2) for x [N, C, H, W], in one pass; the backward pass
/// routes each gradient to the first maximal input of its window (PyTorch's rule).
at::Tensor relu_max_pool2x2(const at::Tensor& x);

/// linear(x, weight, bias) for x [N, in], computed as a 1x1 convolution so oneDNN runs it.
at::Tensor linear_onednn(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace ddp::models

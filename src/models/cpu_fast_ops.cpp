#include "models/cpu_fast_ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace ddp::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr uint8_t kNoGradient = 4;  // window whose maximum is <= 0: relu passes no gradient

bool fast_pool_applies(const at::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() == 4 && x.size(2) >= 2 && x.size(3) >= 2;
}

// For each 2x2 window: out = relu(max), arg = position (0..3, row-major) of the first maximum, or
// kNoGradient when the maximum is not positive.
void pool_forward(const at::Tensor& x, at::Tensor& out, at::Tensor& arg) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), Ho = H / 2, Wo = W / 2;
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  uint8_t* a = arg.data_ptr<uint8_t>();
  at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* src = in + p * H * W;
      float* dst = o + p * Ho * Wo;
      uint8_t* dst_arg = a + p * Ho * Wo;
      for (int64_t i = 0; i < Ho; ++i) {
        const float* r0 = src + 2 * i * W;
        const float* r1 = r0 + W;
        for (int64_t j = 0; j < Wo; ++j) {
          const float v[4] = {r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]};
          float m = v[0];
          uint8_t best = 0;
          for (uint8_t k = 1; k < 4; ++k) {
            if (v[k] > m || std::isnan(v[k])) {
              m = v[k];
              best = k;
            }
          }
          const bool positive = m > 0.0f;
          dst[i * Wo + j] = positive || std::isnan(m) ? m : 0.0f;
          dst_arg[i * Wo + j] = positive ? best : kNoGradient;
        }
      }
    }
  });
}

at::Tensor pool_backward(const at::Tensor& grad_out, const at::Tensor& arg, at::IntArrayRef input_sizes) {
  at::Tensor g = grad_out.contiguous();
  at::Tensor grad_in = at::zeros(input_sizes, g.options());
  const int64_t planes = input_sizes[0] * input_sizes[1], H = input_sizes[2], W = input_sizes[3];
  const int64_t Ho = H / 2, Wo = W / 2;
  const float* go = g.data_ptr<float>();
  const uint8_t* a = arg.data_ptr<uint8_t>();
  float* gi = grad_in.data_ptr<float>();
  at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float* dst = gi + p * H * W;
      for (int64_t i = 0; i < Ho; ++i) {
        for (int64_t j = 0; j < Wo; ++j) {
          const int64_t o = p * Ho * Wo + i * Wo + j;
          const uint8_t k = a[o];
          if (k == kNoGradient) continue;
          dst[(2 * i + (k >> 1)) * W + 2 * j + (k & 1)] = go[o];
        }
      }
    }
  });
  return grad_in;
}

class ReluMaxPool2x2 : public torch::autograd::Function<ReluMaxPool2x2> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input) {
    at::Tensor x = input.contiguous();
    const int64_t N = x.size(0), C = x.size(1), Ho = x.size(2) / 2, Wo = x.size(3) / 2;
    at::Tensor out = at::empty({N, C, Ho, Wo}, x.options());
    at::Tensor arg = at::empty({N, C, Ho, Wo}, x.options().dtype(at::kByte));
    pool_forward(x, out, arg);
    ctx->save_for_backward({arg});
    ctx->saved_data["sizes"] = x.sizes().vec();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor arg = ctx->get_saved_variables()[0];
    std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    return {pool_backward(grads[0], arg, sizes)};
  }
};

}  // namespace

at::Tensor relu_max_pool2x2(const at::Tensor& x) {
  if (!fast_pool_applies(x)) return at::max_pool2d(at::relu(x), {2, 2}, {2, 2});
  return ReluMaxPool2x2::apply(x);
}

at::Tensor linear_onednn(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  const bool onednn = at::hasMKLDNN() && at::globalContext().userEnabledMkldnn();
  if (!onednn || !x.device().is_cpu() || x.scalar_type() != at::kFloat || x.dim() != 2) return at::linear(x, weight, bias);
  const int64_t n = x.size(0), in = weight.size(1), out = weight.size(0);
  return at::conv2d(x.reshape({n, in, 1, 1}), weight.view({out, in, 1, 1}), bias).view({n, out});
}

}  // namespace ddp::models

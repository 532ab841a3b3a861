#include "data/common/host_memory.h"

#include <ATen/ATen.h>

namespace ddp::data {

bool wants_pinned_memory(const c10::Device& target) { return target.is_cuda(); }

at::Tensor empty_host_tensor(at::IntArrayRef sizes, at::ScalarType dtype, const c10::Device& target) {
  auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  if (wants_pinned_memory(target)) options = options.pinned_memory(true);
  return at::empty(sizes, options);
}

at::Tensor to_device(const at::Tensor& host, const c10::Device& target) {
  if (target.is_cpu()) return host;
  return host.to(target, /*non_blocking=*/host.is_pinned());
}

}  // namespace ddp::data

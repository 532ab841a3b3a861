#pragma once
// Host buffers for batches bound for a device: pinned (page-locked) when the target is CUDA, so the
// host-to-device copy can be asynchronous; ordinary memory otherwise (a CPU-only LibTorch cannot
// pin at all, and pinning for a CPU target would only cost).
//
//   at::Tensor images = ddp::data::empty_host_tensor({64, 3, 32, 32}, at::kFloat, device);
//   ... fill images ...
//   at::Tensor on_device = ddp::data::to_device(images, device);   // non_blocking when pinned

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace ddp::data {

/// True when batches for `target` should live in pinned memory.
bool wants_pinned_memory(const c10::Device& target);

/// Uninitialised contiguous CPU tensor, pinned when wants_pinned_memory(target).
at::Tensor empty_host_tensor(at::IntArrayRef sizes, at::ScalarType dtype, const c10::Device& target);

/// `host` on `target`: the same tensor for a CPU target, otherwise a copy (non_blocking when pinned).
at::Tensor to_device(const at::Tensor& host, const c10::Device& target);

}  // namespace ddp::data

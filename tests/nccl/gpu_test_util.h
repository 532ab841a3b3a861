#pragma once
// Shared helpers of the GPU tests: skip when there is no usable device, tensor options on cuda:N.

#include <ddp/process_group_nccl.h>

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <gtest/gtest.h>

#define DDP_REQUIRE_GPU()                                                                    \
  if (!ddp::nccl_available())                                                                \
  GTEST_SKIP() << "needs a CUDA device and a CUDA LibTorch: " << ddp::nccl_unavailable_reason()

namespace ddp::testing {

inline at::TensorOptions on_cuda(at::ScalarType type, int device = 0) {
  return at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device))).dtype(type);
}

inline int cuda_device_count() {
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) return 0;
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->deviceCount();
}

inline const std::vector<at::ScalarType>& reduction_dtypes() {
  static const std::vector<at::ScalarType> types = {at::kFloat, at::kDouble, at::kHalf,
                                                    at::kBFloat16, at::kInt, at::kLong};
  return types;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace ddp::testing

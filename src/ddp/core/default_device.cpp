// default_device(): which device this rank trains on, and why it is the CPU when it is.
#include <ddp/errors.h>
#include <ddp/init.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include "ddp/core/init_state.h"
#include "ddp/core/no_cuda_device.h"

namespace ddp {
namespace {

int visible_cuda_devices() { return static_cast<int>(torch::cuda::device_count()); }

}  // namespace

std::string cpu_fallback_reason() {
  // A CUDA LibTorch registers its CUDA device guard when libtorch_cuda loads, device or not;
  // at::hasCUDA() is false there too without a device, so it cannot tell the two apart.
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) return "LibTorch built without CUDA";
  if (visible_cuda_devices() == 0) return detail::no_cuda_device_visible();
  return "";
}

c10::Device default_device() {
  int count = visible_cuda_devices();
  if (count == 0) return c10::Device(c10::kCPU);
  int local_rank = detail::local_rank_for_device();
  // One visible device per process (a launcher set CUDA_VISIBLE_DEVICES per rank): it is ours.
  if (count == 1) return c10::Device(c10::kCUDA, 0);
  if (local_rank >= count)
    throw ConfigError("LOCAL_RANK=" + std::to_string(local_rank) + " but only " + std::to_string(count) +
                      " CUDA devices are visible: start at most one process per GPU (--nproc-per-node " +
                      std::to_string(count) + ")");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace ddp

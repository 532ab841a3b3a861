// nccl_available() and friends when ddp is built with NCCL: the build has it, but LibTorch may lack
// CUDA (Debian's is a CPU build) or the machine may show no device.
#include "ddp/core/no_cuda_device.h"
#include "ddp/nccl/stream_bridge.h"

#include <ddp/process_group_nccl.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/version.h>

namespace ddp {

std::string nccl_unavailable_reason() {
  if (!nccl_backend::cuda_guard_registered())
    return std::string("LibTorch has no CUDA (LibTorch ") + TORCH_VERSION +
           " in this process is a CPU build: no CUDA device type registered)";
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device usable: cudaGetDeviceCount failed: ") + cudaGetErrorName(err) + ": " +
           cudaGetErrorString(err);
  }
  if (count == 0) return detail::no_cuda_device_visible();
  return "";
}

bool nccl_available() { return nccl_unavailable_reason().empty(); }

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v <= 0) return "";
  // Since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace ddp

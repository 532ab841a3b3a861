#pragma once
// The one wording of "this process sees no CUDA device", shared by default_device()'s CPU fallback
// (cpu_fallback_reason) and the NCCL backend's availability (nccl_unavailable_reason), so a user
// reading either log line sees the same cause, with CUDA_VISIBLE_DEVICES when it is set (an empty
// or stale value is the usual reason a GPU machine shows none).
//
//   if (count == 0) return no_cuda_device_visible();   // "no CUDA device visible (CUDA_VISIBLE_DEVICES='')"

#include <string>

namespace ddp::detail {

std::string no_cuda_device_visible();

}  // namespace ddp::detail

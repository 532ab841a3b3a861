#pragma once
// Small collectives the checkpoint and stop logic need, on the device the group's backend takes
// (CPU for Gloo, this rank's GPU for NCCL).
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ddp {
class ProcessGroup;
namespace detail {

/// cpu for Gloo; ddp::default_device() for NCCL (the device init_process_group builds it on).
c10::Device collective_device(const ProcessGroup& pg);

/// `cpu` moved to collective_device(pg) (itself for Gloo).
at::Tensor on_collective_device(const at::Tensor& cpu, const ProcessGroup& pg);

/// Every rank's `value`, by rank.
std::vector<int64_t> allgather_int64(ProcessGroup& pg, int64_t value);

/// Every rank's bytes, by rank (lengths may differ).
std::vector<std::string> allgather_bytes(ProcessGroup& pg, const std::string& mine);

/// Root's value on every rank.
int64_t broadcast_int64(ProcessGroup& pg, int64_t value, int root = 0);

/// The maximum of `value` over all ranks.
int64_t allreduce_max_int64(ProcessGroup& pg, int64_t value);

}  // namespace detail
}  // namespace ddp

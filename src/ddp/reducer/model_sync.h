#pragma once
// Construction-time agreement between ranks: same parameters everywhere, rank 0's values.

#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace ddp::detail {

/// Collective. ConfigError on every rank when some rank's parameters differ from rank 0's in
/// count, names, shapes or dtypes; the message names the first differing parameter and the ranks.
void verify_same_parameters(ProcessGroup& pg, const std::vector<std::string>& names,
                            const std::vector<at::Tensor>& params);

/// Collective. Every tensor becomes rank `root`'s; tensors are grouped per (device, dtype) into
/// fused broadcasts of at most `chunk_bytes` each.
void broadcast_coalesced(ProcessGroup& pg, const std::vector<at::Tensor>& tensors, int root = 0,
                         int64_t chunk_bytes = 64ll << 20);

}  // namespace ddp::detail

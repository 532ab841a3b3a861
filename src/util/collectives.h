#pragma once
// The small collectives ddp's helpers need (checkpoint agreement, stop votes, model checks, gathering
// predictions), written once on the public ProcessGroup API. Every tensor goes to pg.device() (the
// CPU for Gloo, this rank's GPU for NCCL) before it is handed to the group. All are collective: every
// rank calls them in the same order.
//
//   std::vector<std::string> all = ddp::util::allgather_bytes(pg, mine);   // by rank, any lengths
//   at::Tensor rows = ddp::util::allgather_rows(pg, local_logits);         // [sum of n_r, k]
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ddp {
class ProcessGroup;
}

namespace ddp::util {

/// `t` on pg.device() (`t` itself when it is already there).
at::Tensor to_group_device(const at::Tensor& t, const ProcessGroup& pg);

/// Every rank's `value`, by rank.
std::vector<int64_t> allgather_int64(ProcessGroup& pg, int64_t value);

/// Root's value on every rank.
int64_t broadcast_int64(ProcessGroup& pg, int64_t value, int root = 0);

/// The maximum of `value` over all ranks.
int64_t allreduce_max_int64(ProcessGroup& pg, int64_t value);

/// The variable-length allgather: `local` is [n, ...] (n may differ across ranks and be 0; the other
/// dimensions and the dtype must match). Returns each rank's rows, by rank, on pg.device(). One
/// allgather of the counts, then (unless every count is 0) one of the rows padded to the largest.
std::vector<at::Tensor> allgather_rows_by_rank(ProcessGroup& pg, const at::Tensor& local);

/// allgather_rows_by_rank concatenated: [sum of n_r, ...]. A group of one returns `local`.
at::Tensor allgather_rows(ProcessGroup& pg, const at::Tensor& local);

/// Every rank's bytes, by rank (lengths may differ).
std::vector<std::string> allgather_bytes(ProcessGroup& pg, const std::string& mine);

}  // namespace ddp::util

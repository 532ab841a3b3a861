#pragma once
// Rows from every rank, in rank order, when ranks hold different numbers of rows (validation and
// prediction shares are not padded, so no sample is counted twice).
//
//   at::Tensor all = ddp::ranzcr::gather_rows(*pg, local_logits);   // [sum of n_r, k] on every rank
//
// One allgather of the row counts, then one of the rows padded to the largest count. The tensors
// stay on `local`'s device (CUDA for an NCCL group).

#include <ATen/core/Tensor.h>

namespace ddp {
class ProcessGroup;
}

namespace ddp::ranzcr {

/// `local` is [n, ...] on this rank (n may be 0 and differ across ranks; the other dimensions and
/// the dtype must match). Returns the concatenation over ranks 0..size-1. Collective.
at::Tensor gather_rows(ProcessGroup& pg, const at::Tensor& local);

}  // namespace ddp::ranzcr

#pragma once
// Element-wise reduction kernels for Gloo's allreduce and our ring reduce-scatter, one per
// (dtype, op). Gloo only knows float16; bfloat16 and the min/max of half types are ours.

#include <ddp/process_group.h>

#include <c10/core/ScalarType.h>

#include <cstddef>

namespace ddp::gloo_backend {

/// out[i] = op(a[i], b[i]) for n elements; `out` may equal `a`.
using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

/// True for the dtypes allreduce/reduce_scatter accept: float32, float64, float16, bfloat16,
/// int32, int64.
bool is_reducible(c10::ScalarType dtype);

/// The kernel for `dtype` and `op` (avg reduces as sum; the caller divides afterwards).
/// ConfigError naming `what` (the operation) when the dtype is not reducible.
ReduceFn reduce_function(c10::ScalarType dtype, ReduceOp op, const char* what);

}  // namespace ddp::gloo_backend

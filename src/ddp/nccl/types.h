#pragma once
// Mapping ddp/ATen names onto NCCL's.

#include <ddp/process_group.h>

#include <c10/core/ScalarType.h>
#include <nccl.h>

#include <optional>

namespace ddp::nccl_backend {

/// The NCCL type for a reduction over `type`; nullopt for dtypes reductions do not take.
std::optional<ncclDataType_t> reduction_type(c10::ScalarType type);
ncclRedOp_t reduction_op(ReduceOp op);
/// "sum", "avg", "min", "max" (for messages; kept here so the NCCL files stand alone).
const char* reduction_name(ReduceOp op);

}  // namespace ddp::nccl_backend

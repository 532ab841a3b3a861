#pragma once
// The NCCL process group's environment switches, under our names and c10d's (so a job written for
// PyTorch's ProcessGroupNCCL keeps its settings). Pure functions of an environment map: they build and
// are tested without NCCL; process_group_nccl.cpp applies them.
//
//   if (auto v = blocking_wait_from_env(util::process_env())) options.blocking_wait(*v);
//
// Rules, for each setting: DDP_* wins over c10d's names (and TORCH_NCCL_* over the older NCCL_*); a
// set variable that disagrees with the winner is logged at WARN naming both; any set variable with a
// value that is not a boolean (1/0, true/false, yes/no) is a ConfigError naming it.

#include <optional>

#include "util/env.h"

namespace ddp::nccl_backend {

/// Work::wait() blocks the CPU: DDP_NCCL_BLOCKING_WAIT, else TORCH_NCCL_BLOCKING_WAIT, else
/// NCCL_BLOCKING_WAIT (what torch 1.13 read). nullopt when none is set (NcclOptions decides).
std::optional<bool> blocking_wait_from_env(const util::EnvMap& env);

/// Ops record their tensors on the NCCL stream with the caching allocator: DDP_NCCL_RECORD_STREAMS,
/// else the inverse of TORCH_NCCL_AVOID_RECORD_STREAMS (=1 means DDP_NCCL_RECORD_STREAMS=0). True
/// when neither is set.
bool record_streams_from_env(const util::EnvMap& env);

}  // namespace ddp::nccl_backend

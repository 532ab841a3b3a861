#pragma once
// This process's random generator states as one byte string, so every rank's can travel to rank 0
// and into the checkpoint.
//
// Entries: "cpu" (LibTorch's default CPU generator), "cuda:<i>" (the default generator of each CUDA
// device this process has initialized), "gen:<name>" (generators the trainer registered).
#include <ATen/core/Generator.h>

#include <string>
#include <utility>
#include <vector>

namespace ddp::detail {

using NamedGenerators = std::vector<std::pair<std::string, at::Generator>>;

/// The states, serialized: "DDPRNG1\n", u32 count, then per entry u32 name length, name,
/// u64 state length, state bytes (little-endian).
std::string capture_rng_states(const NamedGenerators& tracked, bool include_cuda);

/// Restores every state `blob` holds that this process has a generator for; a registered generator
/// the blob lacks is logged (WARN). DataError naming `source` when the blob is malformed.
void restore_rng_states(const std::string& blob, const NamedGenerators& tracked, bool include_cuda,
                        const std::string& source);

}  // namespace ddp::detail

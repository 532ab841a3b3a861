#pragma once
// The collectives of the ranks of one host over their shared segment (shm_group.h).
//
// Data moves in pieces of at most piece_bytes() per slot, so every piece stays in the caches while
// it is copied and reduced. Each reduction is computed by exactly one member in the fixed order
// member 0, 1, 2, ... and copied by the others, so every member gets the same bits.
// All functions must be called by every member of the group with matching arguments.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ddp/gloo/reduce_functions.h"

namespace ddp::gloo_backend {

class ShmGroup;
struct OpSignature;

/// Every member publishes `mine` and compares all: ConfigError naming the op and each distinct
/// call when they differ (before any data moves). Also a barrier.
void shm_check_signatures(ShmGroup& g, const OpSignature& mine, const std::string& op_name);

/// In place: `data` (bytes, elements of element_size) becomes the reduction over the members.
void shm_allreduce(ShmGroup& g, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce);

/// In place: `data` becomes member `root`'s.
void shm_broadcast(ShmGroup& g, uint8_t* data, size_t bytes, int root);

/// blocks[m] (bytes each) is member m's block: this member's holds its input, and afterwards
/// every block holds its member's input.
void shm_allgather(ShmGroup& g, const std::vector<uint8_t*>& blocks, size_t bytes);

/// inputs[m] (bytes each) is what this member contributes to member m's result; `output`
/// receives the reduction over the members of their inputs[index()].
void shm_reduce_scatter(ShmGroup& g, const std::vector<const uint8_t*>& inputs, uint8_t* output, size_t bytes,
                        size_t element_size, ReduceFn reduce);

}  // namespace ddp::gloo_backend

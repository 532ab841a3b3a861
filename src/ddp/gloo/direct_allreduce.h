#pragma once
// Allreduce of small buffers in one round: every rank sends its buffer to every other rank and
// reduces what it receives, in rank order, so every rank computes bit-identical results.
//
// A ring needs 2(n-1) dependent steps; for small buffers each step costs a round trip plus thread
// wake-ups, so one exchange is much faster. It moves (n-1) x bytes per rank instead of
// 2(n-1)/n x bytes, hence only for small buffers.

#include <cstddef>
#include <cstdint>

#include "ddp/gloo/reduce_functions.h"

namespace ddp::gloo_backend {

class Exchange;

/// True when the direct exchange is to be used for `bytes` over `size` ranks: at most
/// `max_traffic` bytes sent per rank (GlooOptions::direct_allreduce_max_bytes).
bool prefer_direct_allreduce(size_t bytes, int size, size_t max_traffic);

/// `scratch`: size() x bytes.
void direct_allreduce(Exchange& ex, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce,
                      uint8_t* scratch);

}  // namespace ddp::gloo_backend

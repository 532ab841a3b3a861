#pragma once
// Broadcast and barrier over an Exchange.

#include <cstddef>
#include <cstdint>

namespace ddp::gloo_backend {

class Exchange;

/// The root sends `bytes` at `data` to every other rank, which receives into its own `data`.
void broadcast(Exchange& ex, uint8_t* data, size_t bytes, int root);

/// Dissemination barrier: ceil(log2 n) rounds of empty messages; nobody leaves before all arrived.
void barrier(Exchange& ex);

}  // namespace ddp::gloo_backend

#pragma once
// Broadcast over an Exchange (barrier is the signature exchange of op_signature.h).

#include <cstddef>
#include <cstdint>

namespace ddp::gloo_backend {

class Exchange;

/// The root sends `bytes` at `data` to every other rank, which receives into its own `data`.
void broadcast(Exchange& ex, uint8_t* data, size_t bytes, int root);

}  // namespace ddp::gloo_backend

#pragma once
// Allreduce of small buffers in one round: every rank sends its buffer to every other rank and
// reduces what it receives, in rank order, so every rank computes bit-identical results.
//
// Gloo's ring needs 2(n-1) dependent steps (more with its pipelining segments); for small buffers
// each step costs a network round trip plus thread wake-ups, so one exchange is much faster. It
// moves (n-1) x bytes per rank instead of 2(n-1)/n x bytes, hence only for small buffers.

#include "ddp/gloo/reduce_functions.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace gloo {
class Context;
}

namespace ddp::gloo_backend {

struct DirectAllreduceArgs {
  void* data = nullptr;  ///< in/out
  size_t bytes = 0;
  size_t element_size = 0;
  ReduceFn reduce = nullptr;
  void* scratch = nullptr;  ///< size() x bytes
  uint32_t tag = 0;
  std::chrono::milliseconds timeout{0};
  /// Set before every wait to the rank being waited on, so a failure can name it.
  int* waiting_on = nullptr;
};

/// True when the direct exchange is the better choice for `bytes` over `size` ranks.
bool prefer_direct_allreduce(size_t bytes, int size);

void direct_allreduce(const std::shared_ptr<::gloo::Context>& context, const DirectAllreduceArgs& args);

}  // namespace ddp::gloo_backend

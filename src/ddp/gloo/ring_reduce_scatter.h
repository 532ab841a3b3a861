#pragma once
// Ring reduce-scatter over Gloo's point-to-point transport (Gloo 0.5 has no new-style
// reduce-scatter with timeouts).
//
// `data` holds size() equal chunks, chunk i destined for rank i. In n-1 steps every rank sends one
// chunk to its right neighbour and adds the chunk arriving from its left neighbour into its own
// copy; afterwards chunk rank() holds the reduction over all ranks (the other chunks hold partial
// results). Each rank moves (n-1)/n of the data, the optimum.

#include "ddp/gloo/reduce_functions.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace gloo {
class Context;
}

namespace ddp::gloo_backend {

struct RingReduceScatterArgs {
  void* data = nullptr;
  size_t chunk_bytes = 0;
  size_t element_size = 0;
  ReduceFn reduce = nullptr;
  void* scratch = nullptr;  ///< chunk_bytes of receive space
  uint32_t tag = 0;
  std::chrono::milliseconds timeout{0};
  /// Set before every wait to the rank being waited on, so a failure can name it.
  int* waiting_on = nullptr;
};

void ring_reduce_scatter(const std::shared_ptr<::gloo::Context>& context, const RingReduceScatterArgs& args);

}  // namespace ddp::gloo_backend

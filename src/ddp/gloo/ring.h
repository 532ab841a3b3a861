#pragma once
// Ring collectives over an Exchange: reduce-scatter, allgather, and allreduce as the two in a row.
//
// The buffer is cut into size() chunks, chunk c ending up at rank c after the reduce-scatter.
// Each chunk is cut into k >= 2 segments and the ring steps are walked segment by segment with two
// segments in flight, so sending, receiving and reducing overlap. Every rank sends to rank+1 and
// receives from rank-1; each moves (n-1)/n of the buffer per phase, the optimum.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddp/gloo/reduce_functions.h"

namespace ddp::gloo_backend {

class Exchange;

/// Byte ranges of the size() chunks (element-aligned, contiguous, in rank order).
struct ChunkLayout {
  std::vector<size_t> offset;
  std::vector<size_t> length;
  /// `elements` split as evenly as possible (the first chunks take one more).
  static ChunkLayout even(size_t elements, size_t element_size, int chunks);
  /// `chunks` chunks of `bytes` each.
  static ChunkLayout equal(size_t bytes, int chunks);
  size_t total() const { return offset.empty() ? 0 : offset.back() + length.back(); }
};

struct RingArgs {
  uint8_t* data = nullptr;
  ChunkLayout chunks;
  size_t element_size = 1;
  ReduceFn reduce = nullptr;  ///< needed for the reduce-scatter phase
  bool reduce_scatter = false;
  bool allgather = false;
  size_t max_segment_bytes = 4 << 20;
  /// Receive space for the reduce-scatter phase: 2 x scratch_segment_bytes(args) bytes.
  uint8_t* scratch = nullptr;
};

/// Bytes of one receive slot the reduce-scatter phase needs (it needs two).
size_t scratch_segment_bytes(const RingArgs& args, int size);

void ring(Exchange& ex, const RingArgs& args);

}  // namespace ddp::gloo_backend

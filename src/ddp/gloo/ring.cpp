#include "ddp/gloo/ring.h"

#include <algorithm>
#include <stdexcept>

#include "ddp/gloo/exchange.h"

namespace ddp::gloo_backend {

ChunkLayout ChunkLayout::even(size_t elements, size_t element_size, int chunks) {
  ChunkLayout l;
  size_t base = elements / chunks, extra = elements % chunks, at = 0;
  for (int c = 0; c < chunks; ++c) {
    size_t n = (base + (static_cast<size_t>(c) < extra ? 1 : 0)) * element_size;
    l.offset.push_back(at);
    l.length.push_back(n);
    at += n;
  }
  return l;
}

ChunkLayout ChunkLayout::equal(size_t bytes, int chunks) {
  ChunkLayout l;
  for (int c = 0; c < chunks; ++c) {
    l.offset.push_back(static_cast<size_t>(c) * bytes);
    l.length.push_back(bytes);
  }
  return l;
}

namespace {

// Segments per chunk: the same on every rank (it depends only on the layout), at least two so one
// segment can be in flight while the other is reduced.
size_t segments_per_chunk(const RingArgs& a) {
  size_t longest = a.chunks.length.empty() ? 0 : *std::max_element(a.chunks.length.begin(), a.chunks.length.end());
  return std::max<size_t>(2, (longest + a.max_segment_bytes - 1) / a.max_segment_bytes);
}

struct Range {
  size_t offset = 0, length = 0;
};

// Segment `seg` of chunk `c`, in bytes, split by elements.
Range segment(const RingArgs& a, size_t k, int c, size_t seg) {
  size_t elements = a.chunks.length[c] / a.element_size;
  size_t base = elements / k, extra = elements % k;
  size_t first = seg * base + std::min(seg, extra);
  size_t count = base + (seg < extra ? 1 : 0);
  return {a.chunks.offset[c] + first * a.element_size, count * a.element_size};
}

}  // namespace

size_t scratch_segment_bytes(const RingArgs& a, int) {
  size_t k = segments_per_chunk(a);
  size_t longest = a.chunks.length.empty() ? 0 : *std::max_element(a.chunks.length.begin(), a.chunks.length.end());
  size_t elements = longest / a.element_size;
  return ((elements + k - 1) / k) * a.element_size;
}

void ring(Exchange& ex, const RingArgs& a) {
  const int n = ex.size(), r = ex.rank();
  if (n == 1 || a.chunks.total() == 0) return;
  if (a.reduce_scatter && (a.reduce == nullptr || a.scratch == nullptr))
    throw std::logic_error("ring: the reduce-scatter phase needs a reduce function and scratch space");
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const size_t k = segments_per_chunk(a);
  const size_t slot_bytes = a.reduce_scatter ? scratch_segment_bytes(a, n) : 0;

  // The ring steps, reduce-scatter first. At reduce-scatter step s a rank sends the chunk holding
  // s+1 contributions and adds the arriving one into its own copy; after n-1 steps chunk r is
  // complete at rank r. At allgather step s it forwards the complete chunk it got last.
  struct Step {
    bool reduce;
    int send_chunk, recv_chunk;
  };
  std::vector<Step> steps;
  for (int s = 0; a.reduce_scatter && s < n - 1; ++s)
    steps.push_back({true, (r - s - 1 + 2 * n) % n, (r - s - 2 + 2 * n) % n});
  for (int s = 0; a.allgather && s < n - 1; ++s) steps.push_back({false, (r - s + 2 * n) % n, (r - s - 1 + 2 * n) % n});

  Exchange::Buffer* data = ex.buffer(a.data, a.chunks.total());
  Exchange::Buffer* tmp = a.reduce_scatter ? ex.buffer(a.scratch, 2 * slot_bytes) : nullptr;

  // Unit u = (step u / k, segment u % k). Units run in order with two in flight. The segment a
  // unit sends was completed by unit u - k (same segment, previous step), which has finished by
  // the time unit u is posted because k >= 2.
  const size_t units = steps.size() * k;
  auto post = [&](size_t u) {
    const Step& st = steps[u / k];
    Range in = segment(a, k, st.recv_chunk, u % k), out = segment(a, k, st.send_chunk, u % k);
    if (in.length > 0) {
      if (st.reduce) {
        ex.recv(tmp, left, (u % 2) * slot_bytes, in.length);
      } else {
        ex.recv(data, left, in.offset, in.length);
      }
    }
    if (out.length > 0) ex.send(data, right, out.offset, out.length);
  };

  const size_t ahead = std::min<size_t>(2, units);
  for (size_t u = 0; u < ahead; ++u) post(u);
  for (size_t u = 0; u < units; ++u) {
    const Step& st = steps[u / k];
    Range in = segment(a, k, st.recv_chunk, u % k), out = segment(a, k, st.send_chunk, u % k);
    if (in.length > 0) {
      if (st.reduce) {
        ex.wait_recv(tmp, left);
        a.reduce(a.data + in.offset, a.data + in.offset, a.scratch + (u % 2) * slot_bytes, in.length / a.element_size);
      } else {
        ex.wait_recv(data, left);
      }
    }
    if (out.length > 0) ex.wait_send(data, right);
    if (u + ahead < units) post(u + ahead);
  }
}

}  // namespace ddp::gloo_backend

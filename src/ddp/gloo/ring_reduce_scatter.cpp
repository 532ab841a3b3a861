#include "ddp/gloo/ring_reduce_scatter.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstdint>

namespace ddp::gloo_backend {
namespace {
// Slot prefix for ddp's own collectives; Gloo's use 0x01-0x08.
constexpr uint8_t kReduceScatterSlotPrefix = 0x41;
}  // namespace

void ring_reduce_scatter(const std::shared_ptr<::gloo::Context>& context, const RingReduceScatterArgs& a) {
  const int n = context->size;
  const int rank = context->rank;
  if (n == 1 || a.chunk_bytes == 0) return;
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const uint64_t slot = ::gloo::Slot::build(kReduceScatterSlotPrefix, a.tag);
  const size_t elements = a.chunk_bytes / a.element_size;
  auto* base = static_cast<uint8_t*>(a.data);

  auto data = context->createUnboundBuffer(a.data, a.chunk_bytes * n);
  auto incoming = context->createUnboundBuffer(a.scratch, a.chunk_bytes);
  const auto deadline = std::chrono::steady_clock::now() + a.timeout;
  auto left_ms = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(d, std::chrono::milliseconds(1));
  };

  for (int step = 0; step < n - 1; ++step) {
    // Step s: send the chunk that already holds s+1 contributions, receive the one to add ours to.
    const int send_chunk = (rank - step - 1 + 2 * n) % n;
    const int recv_chunk = (rank - step - 2 + 2 * n) % n;
    incoming->recv(left, slot, 0, a.chunk_bytes);
    data->send(right, slot, static_cast<size_t>(send_chunk) * a.chunk_bytes, a.chunk_bytes);
    if (a.waiting_on) *a.waiting_on = left;
    incoming->waitRecv(left_ms());
    uint8_t* target = base + static_cast<size_t>(recv_chunk) * a.chunk_bytes;
    a.reduce(target, target, a.scratch, elements);
    if (a.waiting_on) *a.waiting_on = right;
    data->waitSend(left_ms());
  }
  if (a.waiting_on) *a.waiting_on = -1;
}

}  // namespace ddp::gloo_backend

#include "ddp/gloo/direct_allreduce.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace ddp::gloo_backend {
namespace {
// Slot prefix for ddp's own collectives; Gloo's use 0x01-0x08.
constexpr uint8_t kDirectAllreduceSlotPrefix = 0x42;
// Bytes a rank may send in total (its buffer times the number of peers) to use the exchange.
constexpr size_t kDirectMaxTraffic = 512 * 1024;
constexpr int kDirectMaxRanks = 8;
}  // namespace

bool prefer_direct_allreduce(size_t bytes, int size) {
  return size > 1 && size <= kDirectMaxRanks && bytes * static_cast<size_t>(size - 1) <= kDirectMaxTraffic;
}

void direct_allreduce(const std::shared_ptr<::gloo::Context>& context, const DirectAllreduceArgs& a) {
  const int n = context->size;
  const int rank = context->rank;
  if (n == 1 || a.bytes == 0) return;
  const uint64_t slot = ::gloo::Slot::build(kDirectAllreduceSlotPrefix, a.tag);
  auto* scratch = static_cast<uint8_t*>(a.scratch);
  auto part = [&](int r) { return scratch + static_cast<size_t>(r) * a.bytes; };

  // Our own contribution goes to our slot of the scratch, so `data` can receive the result.
  std::memcpy(part(rank), a.data, a.bytes);
  auto mine = context->createUnboundBuffer(part(rank), a.bytes);
  std::vector<std::unique_ptr<::gloo::transport::UnboundBuffer>> incoming(n);
  for (int r = 0; r < n; ++r) {
    if (r == rank) continue;
    incoming[r] = context->createUnboundBuffer(part(r), a.bytes);
    incoming[r]->recv(r, slot);
  }
  for (int step = 1; step < n; ++step) mine->send((rank + step) % n, slot);

  const auto deadline = std::chrono::steady_clock::now() + a.timeout;
  auto left_ms = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(d, std::chrono::milliseconds(1));
  };
  for (int r = 0; r < n; ++r) {
    if (r == rank) continue;
    if (a.waiting_on) *a.waiting_on = r;
    incoming[r]->waitRecv(left_ms());
  }
  // Same order on every rank: ((p0 op p1) op p2) ...
  const size_t elements = a.bytes / a.element_size;
  a.reduce(a.data, part(0), part(1), elements);
  for (int r = 2; r < n; ++r) a.reduce(a.data, a.data, part(r), elements);
  for (int step = 1; step < n; ++step) {
    int to = -1;
    if (a.waiting_on) *a.waiting_on = (rank + step) % n;
    mine->waitSend(&to, left_ms());
  }
  if (a.waiting_on) *a.waiting_on = -1;
}

}  // namespace ddp::gloo_backend

#include "ddp/gloo/direct_allreduce.h"

#include <cstring>
#include <vector>

#include "ddp/gloo/exchange.h"

namespace ddp::gloo_backend {
namespace {
// Beyond this many ranks the n x bytes scratch and n-1 simultaneous messages stop paying off.
constexpr int kDirectMaxRanks = 8;
}  // namespace

bool prefer_direct_allreduce(size_t bytes, int size, size_t max_traffic) {
  return size > 1 && size <= kDirectMaxRanks && bytes * static_cast<size_t>(size - 1) <= max_traffic;
}

void direct_allreduce(Exchange& ex, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce,
                      uint8_t* scratch) {
  const int n = ex.size(), rank = ex.rank();
  if (n == 1 || bytes == 0) return;
  const size_t elements = bytes / element_size;

  if (n == 2) {
    // Send straight from `data` and receive the peer's buffer into scratch: no copy of our own
    // contribution. The reduction still takes rank 0's part first, so both ranks compute the same bits.
    const int peer = 1 - rank;
    Exchange::Buffer* mine = ex.buffer(data, bytes);
    Exchange::Buffer* theirs = ex.buffer(scratch, bytes);
    ex.recv(theirs, peer, 0, bytes);
    ex.send(mine, peer, 0, bytes);
    ex.wait_recv(theirs, peer);
    ex.wait_send(mine, peer);  // `data` is overwritten below only once it has left
    if (rank == 0) reduce(data, data, scratch, elements);
    else reduce(data, scratch, data, elements);
    return;
  }

  auto part = [&](int r) { return scratch + static_cast<size_t>(r) * bytes; };
  // Our own contribution goes to our part of the scratch, so `data` can take the result.
  std::memcpy(part(rank), data, bytes);
  Exchange::Buffer* all = ex.buffer(scratch, bytes * n);
  for (int r = 0; r < n; ++r)
    if (r != rank) ex.recv(all, r, static_cast<size_t>(r) * bytes, bytes);
  for (int step = 1; step < n; ++step) ex.send(all, (rank + step) % n, static_cast<size_t>(rank) * bytes, bytes);
  for (int r = 0; r < n; ++r)
    if (r != rank) ex.wait_recv(all, r);
  // Same order on every rank: ((p0 op p1) op p2) ...
  reduce(data, part(0), part(1), elements);
  for (int r = 2; r < n; ++r) reduce(data, data, part(r), elements);
  for (int step = 1; step < n; ++step) ex.wait_send(all, (rank + step) % n);
}

}  // namespace ddp::gloo_backend

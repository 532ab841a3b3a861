#include "ddp/gloo/small_collectives.h"

#include "ddp/gloo/exchange.h"

namespace ddp::gloo_backend {

void broadcast(Exchange& ex, uint8_t* data, size_t bytes, int root) {
  const int n = ex.size(), rank = ex.rank();
  if (n == 1 || bytes == 0) return;
  Exchange::Buffer* buf = ex.buffer(data, bytes);
  if (rank != root) {
    ex.recv(buf, root, 0, bytes);
    ex.wait_recv(buf, root);
    return;
  }
  // Start with the next rank so that not every root sends to rank 0 first.
  for (int step = 1; step < n; ++step) ex.send(buf, (root + step) % n, 0, bytes);
  for (int step = 1; step < n; ++step) ex.wait_send(buf, (root + step) % n);
}

}  // namespace ddp::gloo_backend

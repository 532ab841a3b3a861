#include "ddp/gloo/shm_collectives.h"

#include <algorithm>
#include <cstring>

#include "ddp/gloo/op_signature.h"
#include "ddp/gloo/ring.h"
#include "ddp/gloo/shm_group.h"

namespace ddp::gloo_backend {

void shm_check_signatures(ShmGroup& g, const OpSignature& mine, const std::string& op_name) {
  const int buffer = g.next_buffer();
  encode(mine, g.signature(g.index(), buffer));
  g.sync();
  std::vector<OpSignature> all;
  for (int m = 0; m < g.size(); ++m) all.push_back(m == g.index() ? mine : decode(g.signature(m, buffer)));
  require_same_signatures(all, g.ranks(), g.ranks()[g.index()], op_name);
}

void shm_allreduce(ShmGroup& g, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce) {
  const int n = g.size(), me = g.index();
  if (n == 1 || bytes == 0) return;
  const size_t piece_elements = g.piece_bytes() / element_size;
  const size_t elements = bytes / element_size;
  // The members' parts of a piece, split as the ring splits its chunks: one layout for the full
  // pieces, another for the last one.
  const ChunkLayout full = ChunkLayout::even(piece_elements, element_size, n);
  const ChunkLayout last = ChunkLayout::even(elements - (elements - 1) / piece_elements * piece_elements, element_size, n);
  for (size_t first = 0; first < elements; first += piece_elements) {
    const ChunkLayout& parts = first + piece_elements < elements ? full : last;
    uint8_t* piece = data + first * element_size;
    const int buffer = g.next_buffer();
    uint8_t* mine = g.slot(me, buffer);
    // 1. Publish the parts the others reduce (our own part is read from `data` directly).
    for (int p = 0; p < n; ++p)
      if (p != me) std::memcpy(mine + parts.offset[p], piece + parts.offset[p], parts.length[p]);
    g.sync();
    // 2. Reduce our part over the members, in member order, into our slot (the others' copy source).
    const size_t at = parts.offset[me], len = parts.length[me] / element_size;
    auto source = [&](int m) -> const uint8_t* { return m == me ? piece + at : g.slot(m, buffer) + at; };
    if (len > 0) {
      reduce(mine + at, source(0), source(1), len);
      for (int m = 2; m < n; ++m) reduce(mine + at, mine + at, source(m), len);
    }
    g.sync();
    // 3. Every part's result, from the slot of the member that reduced it.
    for (int p = 0; p < n; ++p) std::memcpy(piece + parts.offset[p], g.slot(p, buffer) + parts.offset[p], parts.length[p]);
  }
}

void shm_broadcast(ShmGroup& g, uint8_t* data, size_t bytes, int root) {
  const int n = g.size(), me = g.index();
  if (n == 1 || bytes == 0) return;
  for (size_t first = 0; first < bytes; first += g.piece_bytes()) {
    const size_t len = std::min(g.piece_bytes(), bytes - first);
    const int buffer = g.next_buffer();
    if (me == root) std::memcpy(g.slot(root, buffer), data + first, len);
    g.sync();
    if (me != root) std::memcpy(data + first, g.slot(root, buffer), len);
  }
}

void shm_allgather(ShmGroup& g, const std::vector<uint8_t*>& blocks, size_t bytes) {
  const int n = g.size(), me = g.index();
  if (n == 1 || bytes == 0) return;
  for (size_t first = 0; first < bytes; first += g.piece_bytes()) {
    const size_t len = std::min(g.piece_bytes(), bytes - first);
    const int buffer = g.next_buffer();
    std::memcpy(g.slot(me, buffer), blocks[me] + first, len);
    g.sync();
    for (int m = 0; m < n; ++m)
      if (m != me) std::memcpy(blocks[m] + first, g.slot(m, buffer), len);
  }
}

void shm_reduce_scatter(ShmGroup& g, const std::vector<const uint8_t*>& inputs, uint8_t* output, size_t bytes,
                        size_t element_size, ReduceFn reduce) {
  const int n = g.size(), me = g.index();
  if (bytes == 0) return;
  if (n == 1) {
    std::memcpy(output, inputs[0], bytes);
    return;
  }
  // A piece holds one stretch of every member's block, so a stretch is piece_bytes / n.
  const size_t stretch_elements = std::max<size_t>(1, g.piece_bytes() / n / element_size);
  const size_t elements = bytes / element_size;
  for (size_t first = 0; first < elements; first += stretch_elements) {
    const size_t count = std::min(stretch_elements, elements - first);
    const size_t offset = first * element_size, len = count * element_size;
    const size_t stride = stretch_elements * element_size;
    const int buffer = g.next_buffer();
    uint8_t* mine = g.slot(me, buffer);
    for (int m = 0; m < n; ++m)
      if (m != me) std::memcpy(mine + m * stride, inputs[m] + offset, len);
    g.sync();
    auto source = [&](int m) -> const uint8_t* { return m == me ? inputs[me] + offset : g.slot(m, buffer) + me * stride; };
    reduce(output + offset, source(0), source(1), count);
    for (int m = 2; m < n; ++m) reduce(output + offset, output + offset, source(m), count);
  }
  // The last piece's buffer is read by the others until they pass their next sync point, which
  // the next piece anyone writes into it waits for (shm_group.h).
}

}  // namespace ddp::gloo_backend

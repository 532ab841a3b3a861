#include "ddp/gloo/routed_collectives.h"

#include <gloo/context.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ddp/gloo/direct_allreduce.h"
#include "ddp/gloo/ring.h"
#include "ddp/gloo/shm_collectives.h"
#include "ddp/gloo/shm_topology.h"
#include "ddp/gloo/small_collectives.h"
#include "ddp/gloo/staging.h"

namespace ddp::gloo_backend {
namespace {

// The ring sends each chunk in segments of at most this size, two in flight. Gloo's ring uses 1 MiB;
// 4 MiB measured up to 3x faster at 8 MiB over loopback (docs/PERFORMANCE.md).
constexpr size_t kRingSegmentBytes = 4 << 20;
// Slot prefixes of ddp's TCP algorithms (Gloo's own collectives use 0x01-0x08; 0x47 is the
// signature check's, 0x4f the monitor's).
constexpr uint8_t kReduceScatterSlots = 0x41;
constexpr uint8_t kDirectAllreduceSlots = 0x42;
constexpr uint8_t kRingAllreduceSlots = 0x43;
constexpr uint8_t kAllgatherSlots = 0x44;
constexpr uint8_t kBroadcastSlots = 0x45;
constexpr uint8_t kLeaderGatherSlots = 0x46;

int my_rank(const Route& r) { return r.env.context->rank; }
int group_size(const Route& r) { return r.env.context->size; }
ShmGroup* local(const Route& r) { return r.topology.local.get(); }
bool is_leader(const Route& r) { return r.topology.hosts[r.topology.host].front() == my_rank(r); }

// Allreduce over TCP among `members` (global ranks; empty: all).
void tcp_allreduce(const Route& route, const std::vector<int>& members, uint8_t* data, size_t bytes,
                   size_t element_size, ReduceFn reduce) {
  const int n = members.empty() ? group_size(route) : static_cast<int>(members.size());
  if (prefer_direct_allreduce(bytes, n, route.direct_allreduce_max_bytes)) {
    Exchange ex(route.env, kDirectAllreduceSlots, members);
    at::Tensor scratch = route.arena.take(at::kByte, static_cast<int64_t>(bytes) * n);
    direct_allreduce(ex, data, bytes, element_size, reduce, static_cast<uint8_t*>(scratch.data_ptr()));
    return;
  }
  Exchange ex(route.env, kRingAllreduceSlots, members);
  RingArgs args;
  args.data = data;
  args.chunks = ChunkLayout::even(bytes / element_size, element_size, n);
  args.element_size = element_size;
  args.reduce = reduce;
  args.reduce_scatter = args.allgather = true;
  args.max_segment_bytes = kRingSegmentBytes;
  at::Tensor scratch = route.arena.take(at::kByte, 2 * static_cast<int64_t>(scratch_segment_bytes(args, n)));
  args.scratch = static_cast<uint8_t*>(scratch.data_ptr());
  ring(ex, args);
}

// The host of global rank `rank`.
int host_of(const Topology& t, int rank) {
  for (size_t h = 0; h < t.hosts.size(); ++h)
    if (std::find(t.hosts[h].begin(), t.hosts[h].end(), rank) != t.hosts[h].end()) return static_cast<int>(h);
  return -1;
}

}  // namespace

void routed_allreduce(const Route& route, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce) {
  if (route.topology.tcp_only()) return tcp_allreduce(route, {}, data, bytes, element_size, reduce);
  if (local(route)) shm_allreduce(*local(route), data, bytes, element_size, reduce);
  if (route.topology.shared_memory_only()) return;
  if (is_leader(route)) tcp_allreduce(route, route.topology.leaders(), data, bytes, element_size, reduce);
  if (local(route)) shm_broadcast(*local(route), data, bytes, 0);
}

void routed_broadcast(const Route& route, uint8_t* data, size_t bytes, int root) {
  const Topology& t = route.topology;
  if (t.tcp_only()) {
    Exchange ex(route.env, kBroadcastSlots);
    return broadcast(ex, data, bytes, root);
  }
  const int root_host = host_of(t, root);
  // The root speaks for its own host; every other host's leader for its host.
  std::vector<int> speakers = t.leaders();
  speakers[root_host] = root;
  const int speaker = speakers[t.host];
  const auto& mine = t.hosts[t.host];
  if (!t.shared_memory_only() && speaker == my_rank(route)) {
    std::vector<int> members = speakers;
    std::sort(members.begin(), members.end());
    Exchange ex(route.env, kBroadcastSlots, members);
    const int root_index = static_cast<int>(std::find(members.begin(), members.end(), root) - members.begin());
    broadcast(ex, data, bytes, root_index);
  }
  if (local(route))
    shm_broadcast(*local(route), data, bytes,
                  static_cast<int>(std::find(mine.begin(), mine.end(), speaker) - mine.begin()));
}

void routed_allgather(const Route& route, uint8_t* all, size_t bytes) {
  const Topology& t = route.topology;
  const int n = group_size(route);
  if (t.tcp_only()) {
    Exchange ex(route.env, kAllgatherSlots);
    RingArgs args;
    args.data = all;
    args.chunks = ChunkLayout::equal(bytes, n);
    args.element_size = 1;
    args.allgather = true;
    args.max_segment_bytes = kRingSegmentBytes;
    return ring(ex, args);
  }
  const auto& mine = t.hosts[t.host];
  if (local(route)) {
    std::vector<uint8_t*> blocks;
    for (int r : mine) blocks.push_back(all + static_cast<size_t>(r) * bytes);
    shm_allgather(*local(route), blocks, bytes);
  }
  if (t.shared_memory_only()) return;
  if (is_leader(route)) {
    // Leaders swap their hosts' blocks: to every other leader, ours in rank order; from it, its host's.
    std::vector<int> leaders = t.leaders();
    Exchange ex(route.env, kLeaderGatherSlots, leaders);
    Exchange::Buffer* buf = ex.buffer(all, bytes * n);
    for (size_t h = 0; h < t.hosts.size(); ++h) {
      if (static_cast<int>(h) == t.host) continue;
      for (int r : t.hosts[h]) ex.recv(buf, static_cast<int>(h), static_cast<size_t>(r) * bytes, bytes);
    }
    for (size_t h = 0; h < t.hosts.size(); ++h) {
      if (static_cast<int>(h) == t.host) continue;
      for (int r : mine) ex.send(buf, static_cast<int>(h), static_cast<size_t>(r) * bytes, bytes);
    }
    for (size_t h = 0; h < t.hosts.size(); ++h) {
      if (static_cast<int>(h) == t.host) continue;
      for (size_t i = 0; i < t.hosts[h].size(); ++i) ex.wait_recv(buf, static_cast<int>(h));
      for (size_t i = 0; i < mine.size(); ++i) ex.wait_send(buf, static_cast<int>(h));
    }
  }
  if (local(route)) shm_broadcast(*local(route), all, bytes * n, 0);
}

void routed_reduce_scatter(const Route& route, uint8_t* all, uint8_t* output, size_t bytes, size_t element_size,
                           ReduceFn reduce) {
  const Topology& t = route.topology;
  const int n = group_size(route), rank = my_rank(route);
  if (t.tcp_only()) {
    Exchange ex(route.env, kReduceScatterSlots);
    RingArgs args;
    args.data = all;
    args.chunks = ChunkLayout::equal(bytes, n);
    args.element_size = element_size;
    args.reduce = reduce;
    args.reduce_scatter = true;
    args.max_segment_bytes = kRingSegmentBytes;
    at::Tensor scratch = route.arena.take(at::kByte, 2 * static_cast<int64_t>(scratch_segment_bytes(args, n)));
    args.scratch = static_cast<uint8_t*>(scratch.data_ptr());
    ring(ex, args);
  } else if (t.shared_memory_only()) {
    std::vector<const uint8_t*> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(all + static_cast<size_t>(r) * bytes);
    return shm_reduce_scatter(*local(route), inputs, output, bytes, element_size, reduce);
  } else {
    // Across hosts: the whole reduction, of which this rank keeps its block.
    routed_allreduce(route, all, bytes * n, element_size, reduce);
  }
  std::memcpy(output, all + static_cast<size_t>(rank) * bytes, bytes);
}

}  // namespace ddp::gloo_backend

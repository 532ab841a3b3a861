#pragma once
// Each collective routed over the group's topology (shm_topology.h), on flat byte buffers:
//   - tcp only (every host one rank): our ring and direct algorithms over Gloo's TCP pairs;
//   - one host: the shared-memory algorithms (shm_collectives.h), no TCP at all;
//   - several hosts: within each host over shared memory, among one leader per host over TCP,
//     then within each host again.
// A host of one rank is its own leader, so a group where shared memory failed for some ranks
// still works, those ranks talking TCP.

#include <cstddef>
#include <cstdint>

#include "ddp/gloo/exchange.h"
#include "ddp/gloo/reduce_functions.h"

namespace ddp::gloo_backend {

class ScratchArena;
struct Topology;

struct Route {
  const Topology& topology;
  OpEnv env;  ///< for the TCP parts
  ScratchArena& arena;
  /// GlooOptions::direct_allreduce_max_bytes.
  size_t direct_allreduce_max_bytes;
};

/// In place: `data` becomes the reduction over all ranks.
void routed_allreduce(const Route& route, uint8_t* data, size_t bytes, size_t element_size, ReduceFn reduce);
/// In place: `data` becomes rank `root`'s.
void routed_broadcast(const Route& route, uint8_t* data, size_t bytes, int root);
/// `all` holds size() blocks of `bytes`, this rank's filled in; afterwards every block is its rank's.
void routed_allgather(const Route& route, uint8_t* all, size_t bytes);
/// `all` holds size() blocks of `bytes` (this rank's contribution to each rank's result);
/// `output` receives the reduction over all ranks of their block rank(). `all` is overwritten.
void routed_reduce_scatter(const Route& route, uint8_t* all, uint8_t* output, size_t bytes, size_t element_size,
                           ReduceFn reduce);

}  // namespace ddp::gloo_backend

#pragma once
// The Gloo process group (CPU tensors) over TCP.
//
//   auto store = std::make_shared<ddp::TCPStore>(...);
//   auto pg = ddp::make_gloo_process_group(store, rank, world_size);

#include <ddp/export.h>
#include <ddp/process_group.h>
#include <ddp/store.h>
#include <torch/arg.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace ddp {

/// Chained setters as in LibTorch (TORCH_ARG): GlooOptions().timeout(std::chrono::minutes(5)).
struct GlooOptions {
  /// Default timeout of every operation; a hung peer becomes a TimeoutError after it.
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::minutes(30);
  /// Interface address to bind; empty: resolve this host's name (GLOO_SOCKET_IFNAME / DDP_SOCKET_IFNAME
  /// pick an interface instead, as in c10d).
  TORCH_ARG(std::string, hostname);
  /// Allreduces whose traffic per rank (bytes x (ranks - 1)) is at most this take one direct
  /// exchange (every rank sends its buffer to every other); larger ones take the ring. Each message
  /// has a fixed cost, so one round wins until the ring's lower traffic does; the measured crossovers
  /// behind the default are in docs/PERFORMANCE.md. 0: always the ring.
  TORCH_ARG(size_t, direct_allreduce_max_bytes) = 4 << 20;
  /// Ranks on one host (same boot id and network namespace, confirmed by handing them one memfd)
  /// move data through shared memory; across hosts the collectives become hierarchical (within
  /// each host, then among one leader per host over TCP). false, or $DDP_SHM=0: TCP between every
  /// pair, as torch's Gloo. docs/PROCESS_GROUP.md says how hosts are found and what it costs.
  TORCH_ARG(bool, shared_memory) = true;
};

/// Connects the full mesh through `store` (keys under "gloo/<n>/", n counting this process's gloo
/// groups) and returns the group, which keeps `store` alive (rank 0 may host its server).
/// Throws StoreError/TimeoutError when peers do not show up in time, ConfigError on bad arguments
/// or an unusable network interface.
DDP_API std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                              GlooOptions options = {});

}  // namespace ddp

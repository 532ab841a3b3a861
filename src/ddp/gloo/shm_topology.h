#pragma once
// Which ranks share a host, found through the store when a gloo group is made.
//
// A host is named by its boot id plus the network namespace: ranks in one pod (or one machine)
// share both; pods on one node share the boot id but not the namespace, and cannot reach each
// other's abstract unix sockets. The hostname is never trusted. Ranks with the same name then
// probe: the lowest (the leader) creates the segment and hands it to the others over a unix
// socket (shm_segment.h); a rank joins only when it received and mapped the very segment the
// leader announced. Every rank publishes the leader it joined, so all ranks agree on the hosts.
// Any failure leaves the rank on TCP with the reason in the log, never a failed group.

#include <ddp/store.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ddp/gloo/shm_group.h"

namespace ddp::gloo_backend {

struct Topology {
  /// The global ranks of each host, ascending; hosts in the order of their lowest rank.
  std::vector<std::vector<int>> hosts;
  /// This rank's host.
  int host = 0;
  /// The shared segment of this rank's host; null when the host has one rank.
  std::unique_ptr<ShmGroup> local;
  /// Why this rank talks TCP only ("DDP_SHM=0", "no other rank on this host", ...).
  std::string tcp_reason;

  /// Every host holds one rank: the plain TCP algorithms apply.
  bool tcp_only() const;
  /// Every rank shares this rank's segment: collectives never touch TCP.
  bool shared_memory_only() const { return local && hosts.size() == 1; }
  /// The leader (lowest rank) of each host, in host order.
  std::vector<int> leaders() const;
  /// "shared memory (ranks 0,1 on this host) + tcp between 2 hosts", "tcp (DDP_SHM=0)", ...
  std::string describe() const;
};

/// Run by every rank of a new group with the same `prefix` (keys "<prefix>/shm/..."). `enabled`:
/// this rank may use shared memory; `piece_bytes`: the size of each data buffer of a slot.
Topology discover_topology(Store& store, const std::string& prefix, int rank, int size, bool enabled,
                           const std::string& disabled_reason, size_t piece_bytes, std::chrono::milliseconds timeout);

}  // namespace ddp::gloo_backend

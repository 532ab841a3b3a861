#pragma once
// How many intra-op (OpenMP) threads one rank should use, shared by the trainers.
#include <ddp/world_info.h>

namespace ddp::trainer {

/// `flag` when > 0 (a --threads flag), else OMP_NUM_THREADS when set (as PyTorch honours it; a
/// ConfigError naming it when it is not a count in 1..1024), else the CPUs this container may use
/// (usable_cpus(): affinity and cgroup quota) shared by the ranks on this node, at least 1.
/// Ranks on this node: LOCAL_WORLD_SIZE from a launcher; without one (PyTorchJob-style
/// RANK/WORLD_SIZE) they are unknown, except that with a loopback MASTER_ADDR they all are.
/// Oversubscribed OpenMP threads spin waiting for each other and crawl, hence the division.
int intra_op_threads(int flag, const WorldInfo& world);

}  // namespace ddp::trainer

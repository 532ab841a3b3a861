#pragma once
// Which rank updates which parameter under ZeroRedundancyOptimizer: PyTorch's sorted-greedy
// partition (torch/distributed/optim/zero_redundancy_optimizer.py, _partition_parameters, the same
// in 1.13 and 2.6), so a ddp shard holds what torch's would, in the order torch's lists it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddp::detail {

struct ZeroPartition {
  /// owner[g][i]: the rank that updates parameter i of group g.
  std::vector<std::vector<int>> owner;
  /// shard[g][r]: the indices in group g of rank r's parameters, in the order they were assigned
  /// (largest first), which is the order of rank r's optimizer's group g.
  std::vector<std::vector<std::vector<size_t>>> shard;
};

/// `numels[g][i]`: elements of parameter i of group g. Group by group, the group's parameters sorted
/// by size, largest first (ties keep their order), each go to the rank with the fewest elements so
/// far (ties to the lowest rank); the counts carry over from one group to the next.
ZeroPartition zero_partition(const std::vector<std::vector<int64_t>>& numels, int world_size);

}  // namespace ddp::detail

#include "ddp/optim/zero_partition.h"

#include <algorithm>
#include <numeric>

namespace ddp::detail {

ZeroPartition zero_partition(const std::vector<std::vector<int64_t>>& numels, int world_size) {
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);
  ZeroPartition p;
  for (const auto& group : numels) {
    std::vector<size_t> order(group.size());
    std::iota(order.begin(), order.end(), size_t{0});
    // Python's sorted(..., reverse=True) is stable: equal sizes keep their order.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return group[a] > group[b]; });
    std::vector<int> owner(group.size(), 0);
    std::vector<std::vector<size_t>> shard(static_cast<size_t>(world_size));
    for (size_t i : order) {
      const auto least = std::min_element(load.begin(), load.end());  // the first of equal minima
      const int rank = static_cast<int>(least - load.begin());
      owner[i] = rank;
      shard[static_cast<size_t>(rank)].push_back(i);
      *least += group[i];
    }
    p.owner.push_back(std::move(owner));
    p.shard.push_back(std::move(shard));
  }
  return p;
}

}  // namespace ddp::detail

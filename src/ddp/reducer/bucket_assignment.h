#pragma once
// Which parameters share a bucket. Pure bookkeeping, no tensors: easy to test on its own.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddp::detail {

struct BucketCaps {
  int64_t first_bytes;  ///< cap of the first bucket of each (device, dtype) group
  int64_t bytes;        ///< cap of every later one
};

/// Walks `order` (indices into `group` / `bytes`) and fills buckets per group (one group per
/// (device, dtype)): a bucket closes as soon as it holds at least its cap, so it may exceed the cap
/// by its last tensor, and a tensor larger than the cap gets a bucket of its own. Buckets come out
/// sorted by the position in `order` of their first tensor, i.e. in the order they become ready
/// when gradients arrive in `order`.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<size_t>& order,
                                                const std::vector<int>& group,
                                                const std::vector<int64_t>& bytes, BucketCaps caps);

/// MiB (as in the options) to bytes; ConfigError naming `what` when negative or not a number.
int64_t mib_to_bytes(double mib, const char* what);

}  // namespace ddp::detail

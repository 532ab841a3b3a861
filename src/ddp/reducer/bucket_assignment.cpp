// Bucket assignment: the same greedy rule as PyTorch's compute_bucket_assignment_by_size.
#include "ddp/reducer/bucket_assignment.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace ddp::detail {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<size_t>& order,
                                                const std::vector<int>& group,
                                                const std::vector<int64_t>& bytes, BucketCaps caps) {
  struct Open {
    std::vector<size_t> members;
    int64_t size = 0;
    bool first = true;  // still filling the group's first bucket
  };
  std::map<int, Open> open;
  std::vector<std::vector<size_t>> done;
  for (size_t index : order) {
    Open& b = open[group[index]];
    b.members.push_back(index);
    b.size += bytes[index];
    if (b.size >= (b.first ? caps.first_bytes : caps.bytes)) {
      done.push_back(std::move(b.members));
      b.members.clear();
      b.size = 0;
      b.first = false;
    }
  }
  for (auto& [key, b] : open)
    if (!b.members.empty()) done.push_back(std::move(b.members));

  std::vector<size_t> position(group.size(), 0);
  for (size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
  std::stable_sort(done.begin(), done.end(), [&](const auto& a, const auto& b) {
    return position[a.front()] < position[b.front()];
  });
  return done;
}

int64_t mib_to_bytes(double mib, const char* what) {
  if (!(mib >= 0) || !std::isfinite(mib))
    throw ConfigError(std::string("DistributedDataParallelOptions: ") + what + " = " +
                      std::to_string(mib) + " MiB; it must be a finite number >= 0");
  return static_cast<int64_t>(mib * 1024.0 * 1024.0);
}

}  // namespace ddp::detail

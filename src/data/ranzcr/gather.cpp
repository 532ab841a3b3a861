#include "data/ranzcr/gather.h"

#include <ddp/process_group.h>

#include <ATen/ATen.h>

#include <vector>

namespace ddp::ranzcr {

at::Tensor gather_rows(ProcessGroup& pg, const at::Tensor& local) {
  const int world = pg.size();
  if (world == 1) return local;
  at::Tensor count = at::full({1}, local.size(0), local.options().dtype(at::kLong));
  std::vector<at::Tensor> counts(static_cast<size_t>(world));
  for (auto& c : counts) c = at::empty_like(count);
  pg.allgather(counts, count)->wait();
  std::vector<int64_t> n(static_cast<size_t>(world));
  int64_t most = 0;
  for (int r = 0; r < world; ++r) {
    n[static_cast<size_t>(r)] = counts[static_cast<size_t>(r)].item<int64_t>();
    most = std::max(most, n[static_cast<size_t>(r)]);
  }
  if (most == 0) return local;  // nothing anywhere: skip the second collective (on every rank alike)
  std::vector<int64_t> padded_shape = local.sizes().vec();
  padded_shape[0] = most;
  at::Tensor padded = at::zeros(padded_shape, local.options());
  if (local.size(0) > 0) padded.narrow(0, 0, local.size(0)).copy_(local);
  std::vector<at::Tensor> rows(static_cast<size_t>(world));
  for (auto& r : rows) r = at::empty_like(padded);
  pg.allgather(rows, padded)->wait();
  std::vector<at::Tensor> parts;
  for (int r = 0; r < world; ++r) parts.push_back(rows[static_cast<size_t>(r)].narrow(0, 0, n[static_cast<size_t>(r)]));
  return at::cat(parts, 0);
}

}  // namespace ddp::ranzcr

#include "util/collectives.h"

#include <ATen/Functions.h>
#include <ddp/process_group.h>

#include <algorithm>
#include <cstring>

namespace ddp::util {
namespace {

at::Tensor one_int64(int64_t value, const ProcessGroup& pg) {
  return to_group_device(at::full({1}, value, at::TensorOptions().dtype(at::kLong)), pg);
}

}  // namespace

at::Tensor to_group_device(const at::Tensor& t, const ProcessGroup& pg) {
  const c10::Device device = pg.device();
  return t.device() == device ? t : t.to(device);
}

std::vector<int64_t> allgather_int64(ProcessGroup& pg, int64_t value) {
  at::Tensor mine = one_int64(value, pg);
  std::vector<at::Tensor> all;
  for (int r = 0; r < pg.size(); ++r) all.push_back(at::empty_like(mine));
  pg.allgather(all, mine)->wait();
  // One copy to the host for all ranks' values, not one per rank.
  at::Tensor host = at::cat(all).cpu();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

int64_t broadcast_int64(ProcessGroup& pg, int64_t value, int root) {
  std::vector<at::Tensor> t = {one_int64(value, pg)};
  pg.broadcast(t, root)->wait();
  return t[0].cpu().item<int64_t>();
}

int64_t allreduce_max_int64(ProcessGroup& pg, int64_t value) {
  std::vector<at::Tensor> t = {one_int64(value, pg)};
  pg.allreduce(t, AllreduceOptions().op(ReduceOp::kMax))->wait();
  return t[0].cpu().item<int64_t>();
}

std::vector<at::Tensor> allgather_rows_by_rank(ProcessGroup& pg, const at::Tensor& local) {
  const int world = pg.size();
  if (world == 1) return {local};
  const std::vector<int64_t> counts = allgather_int64(pg, local.size(0));
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  const at::Tensor mine = to_group_device(local, pg);
  // Nothing anywhere: every rank sees the same counts, so all skip the second collective alike.
  if (most == 0) return std::vector<at::Tensor>(static_cast<size_t>(world), mine);
  std::vector<int64_t> padded_shape = local.sizes().vec();
  padded_shape[0] = most;
  at::Tensor padded = at::zeros(padded_shape, mine.options());
  if (local.size(0) > 0) padded.narrow(0, 0, local.size(0)).copy_(mine);
  std::vector<at::Tensor> rows(static_cast<size_t>(world));
  for (auto& r : rows) r = at::empty_like(padded);
  pg.allgather(rows, padded)->wait();
  for (int r = 0; r < world; ++r) rows[static_cast<size_t>(r)] = rows[static_cast<size_t>(r)].narrow(0, 0, counts[static_cast<size_t>(r)]);
  return rows;
}

at::Tensor allgather_rows(ProcessGroup& pg, const at::Tensor& local) {
  if (pg.size() == 1) return local;
  return at::cat(allgather_rows_by_rank(pg, local), 0);
}

std::vector<std::string> allgather_bytes(ProcessGroup& pg, const std::string& mine) {
  at::Tensor bytes = at::empty({static_cast<int64_t>(mine.size())}, at::TensorOptions().dtype(at::kByte));
  if (!mine.empty()) std::memcpy(bytes.data_ptr(), mine.data(), mine.size());
  std::vector<std::string> out;
  for (const at::Tensor& rank_bytes : allgather_rows_by_rank(pg, bytes)) {
    const at::Tensor host = rank_bytes.cpu().contiguous();
    out.emplace_back(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(host.numel()));
  }
  return out;
}

}  // namespace ddp::util

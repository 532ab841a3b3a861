#include "ddp/checkpoint/collective_device.h"

#include <ATen/Functions.h>
#include <ddp/process_group.h>
#include <ddp/init.h>

#include <algorithm>
#include <cstring>

namespace ddp::detail {

at::Tensor on_collective_device(const at::Tensor& cpu, const ProcessGroup& pg) {
  c10::Device device = collective_device(pg);
  return device.is_cpu() ? cpu : cpu.to(device);
}

c10::Device collective_device(const ProcessGroup& pg) { return pg.device(); }

std::vector<int64_t> allgather_int64(ProcessGroup& pg, int64_t value) {
  at::Tensor mine = on_collective_device(at::full({1}, value, at::TensorOptions().dtype(at::kLong)), pg);
  std::vector<at::Tensor> all;
  for (int r = 0; r < pg.size(); ++r) all.push_back(at::empty_like(mine));
  pg.allgather(all, mine)->wait();
  std::vector<int64_t> out;
  for (auto& t : all) out.push_back(t.cpu().item<int64_t>());
  return out;
}

std::vector<std::string> allgather_bytes(ProcessGroup& pg, const std::string& mine) {
  std::vector<int64_t> sizes = allgather_int64(pg, static_cast<int64_t>(mine.size()));
  int64_t longest = std::max<int64_t>(1, *std::max_element(sizes.begin(), sizes.end()));
  at::Tensor buffer = at::zeros({longest}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(buffer.data_ptr(), mine.data(), mine.size());
  buffer = on_collective_device(buffer, pg);
  std::vector<at::Tensor> all;
  for (int r = 0; r < pg.size(); ++r) all.push_back(at::empty_like(buffer));
  pg.allgather(all, buffer)->wait();
  std::vector<std::string> out;
  for (int r = 0; r < pg.size(); ++r) {
    at::Tensor cpu = all[r].cpu().contiguous();
    out.emplace_back(static_cast<const char*>(cpu.data_ptr()), static_cast<size_t>(sizes[r]));
  }
  return out;
}

int64_t broadcast_int64(ProcessGroup& pg, int64_t value, int root) {
  std::vector<at::Tensor> t = {on_collective_device(at::full({1}, value, at::TensorOptions().dtype(at::kLong)), pg)};
  pg.broadcast(t, root)->wait();
  return t[0].cpu().item<int64_t>();
}

int64_t allreduce_max_int64(ProcessGroup& pg, int64_t value) {
  std::vector<at::Tensor> t = {on_collective_device(at::full({1}, value, at::TensorOptions().dtype(at::kLong)), pg)};
  pg.allreduce(t, AllreduceOptions().op(ReduceOp::kMax))->wait();
  return t[0].cpu().item<int64_t>();
}

}  // namespace ddp::detail

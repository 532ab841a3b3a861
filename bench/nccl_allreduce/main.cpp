// bench_nccl_allreduce [--iters N]: time of one in-place float32 allreduce (sum) through
// ddp::make_nccl_process_group at world size 1, for sizes from 4 KiB to 256 MiB. Prints one line per
// size: "bytes=... us_per_op=... algbw_GBps=...". Without a usable GPU it says why and exits 0.
// Baseline: allreduce_torch.py beside this file (same sizes, same format).
#include "nccl/memory_store.h"

#include <ddp/process_group_nccl.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int iters = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::stoi(argv[i + 1]);
  if (!ddp::nccl_available()) {
    std::printf("skipped: %s\n", ddp::nccl_unavailable_reason().c_str());
    return 0;
  }
  try {
    auto pg = ddp::make_nccl_process_group(std::make_shared<ddp::testing::MemoryStore>(), 0, 1, 0);
    std::printf("impl=ddp nccl=%s world=1\n", ddp::nccl_version().c_str());
    for (size_t bytes = 4096; bytes <= (size_t(256) << 20); bytes *= 4) {
      auto t = at::ones({static_cast<int64_t>(bytes / 4)}, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
      std::vector<at::Tensor> tensors{t};
      for (int i = 0; i < 5; ++i) pg->allreduce(tensors)->wait();
      pg->allreduce(tensors)->wait(std::chrono::minutes(1));  // drain
      auto start = std::chrono::steady_clock::now();
      ddp::WorkPtr last;
      for (int i = 0; i < iters; ++i) {
        last = pg->allreduce(tensors);
        last->wait();
      }
      last->wait(std::chrono::minutes(1));  // blocks the CPU until the GPU finished them all
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
      std::printf("bytes=%zu us_per_op=%.2f algbw_GBps=%.2f\n", bytes, us, bytes / us / 1e3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nccl_allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}

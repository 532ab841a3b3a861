// bench_zero: one rank's side of bench/zero/run.py. ResNet-18 (ddp's models library, 1000 classes:
// torchvision's resnet18) under DDP with Adam, plain ("adam") and sharded across the ranks by
// ddp::ZeroRedundancyOptimizer ("zero"). After the warm-up (Adam's state exists from the first
// step) every rank prints, per mode:
//   RESULT mode=adam|zero rank=R state_bytes=B params=P step_ms=X
// B: the bytes of the tensors in this rank's optimizer state (ddp::optimizer_state_bytes); P: the
// model's parameter elements; X: the median over PASSES passes of STEPS steps (between barriers).
// Environment: the usual RANK/WORLD_SIZE/MASTER_*; arguments: BATCH SIZE STEPS WARMUP PASSES.
#include <ddp/distributed_data_parallel.h>
#include <ddp/init.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "models/resnet.h"

namespace {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;

std::unique_ptr<torch::optim::Optimizer> adam(Groups groups) {
  return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(1e-3));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: bench_zero BATCH SIZE STEPS WARMUP PASSES\n";
    return 2;
  }
  const int64_t batch = std::atol(argv[1]), size = std::atol(argv[2]);
  const int steps = std::atoi(argv[3]), warmup = std::atoi(argv[4]), passes = std::atoi(argv[5]);
  torch::set_num_threads(1);
  at::set_num_interop_threads(1);
  auto pg = ddp::init_process_group();
  torch::manual_seed(pg->rank());
  const at::Tensor x = torch::randn({batch, 3, size, size});
  const at::Tensor y = torch::randint(0, 1000, {batch});
  for (const bool zero : {false, true}) {
    torch::manual_seed(0);
    ddp::models::ResNet net(ddp::models::ResNetOptions(ddp::models::ResNetArch::kResNet18).num_classes(1000));
    ddp::DistributedDataParallel model(net, pg);
    std::unique_ptr<torch::optim::Optimizer> opt =
        zero ? std::make_unique<ddp::ZeroRedundancyOptimizer>(net->parameters(), adam, pg) : adam({Groups{net->parameters()}});
    auto step = [&] {
      opt->zero_grad();
      torch::nn::functional::cross_entropy(model(x), y).backward();
      opt->step();
    };
    for (int i = 0; i < warmup; ++i) step();
    std::vector<double> ms;
    for (int p = 0; p < passes; ++p) {
      pg->barrier()->wait();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) step();
      pg->barrier()->wait();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
    }
    std::sort(ms.begin(), ms.end());
    int64_t params = 0;
    for (const auto& p : net->parameters()) params += p.numel();
    std::cout << "RESULT mode=" << (zero ? "zero" : "adam") << " rank=" << pg->rank()
              << " state_bytes=" << ddp::optimizer_state_bytes(*opt) << " params=" << params
              << " step_ms=" << ms[ms.size() / 2] << std::endl;
  }
  return 0;
}

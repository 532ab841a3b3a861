// bench_sync_bn: one rank's side of bench/sync_bn/run.py. A DDP training step of ResNet-18 (ddp's
// models library, 10 classes) with BatchNorm and with ddp::SyncBatchNorm, in alternating passes so
// machine drift touches both alike. Rank 0 prints one line per pass and mode:
//   RESULT mode=bn|syncbn pass=P step_ms=X
// Environment: the usual RANK/WORLD_SIZE/MASTER_*; arguments: BATCH SIZE STEPS WARMUP PASSES.
#include <ddp/distributed_data_parallel.h>
#include <ddp/init.h>

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "models/resnet.h"

namespace {

using Net = ddp::models::ResNet;

struct Mode {
  std::string name;
  Net net;
  std::shared_ptr<ddp::DistributedDataParallel<Net>> model;
  std::shared_ptr<torch::optim::SGD> opt;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: bench_sync_bn BATCH SIZE STEPS WARMUP PASSES\n";
    return 2;
  }
  const int64_t batch = std::atol(argv[1]), size = std::atol(argv[2]);
  const int steps = std::atoi(argv[3]), warmup = std::atoi(argv[4]), passes = std::atoi(argv[5]);
  torch::set_num_threads(1);
  at::set_num_interop_threads(1);
  auto pg = ddp::init_process_group();
  torch::manual_seed(pg->rank());
  const at::Tensor x = torch::randn({batch, 3, size, size});
  const at::Tensor y = torch::randint(0, 10, {batch});
  std::vector<Mode> modes;
  for (bool sync : {false, true}) {
    torch::manual_seed(0);
    Mode m{sync ? "syncbn" : "bn",
           Net(ddp::models::ResNetOptions(ddp::models::ResNetArch::kResNet18).num_classes(10).sync_bn_group(
               sync ? pg : nullptr)),
           nullptr, nullptr};
    m.model = std::make_shared<ddp::DistributedDataParallel<Net>>(m.net, pg);
    m.opt = std::make_shared<torch::optim::SGD>(m.net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    modes.push_back(std::move(m));
  }
  auto step = [&](Mode& m) {
    m.opt->zero_grad();
    torch::nn::functional::cross_entropy((*m.model)(x), y).backward();
    m.opt->step();
  };
  for (auto& m : modes)
    for (int i = 0; i < warmup; ++i) step(m);
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& m : modes) {
      pg->barrier()->wait();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) step(m);
      pg->barrier()->wait();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
      if (pg->rank() == 0) std::cout << "RESULT mode=" << m.name << " pass=" << pass << " step_ms=" << ms << std::endl;
    }
  }
  return 0;
}

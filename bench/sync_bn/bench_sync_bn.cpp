// bench_sync_bn: one rank's side of bench/sync_bn/run.py. A DDP training step of ResNet-18 (ddp's
// models library, 10 classes) with BatchNorm and with ddp::SyncBatchNorm, in alternating passes so
// machine drift touches both alike. Rank 0 prints one line per pass and mode:
//   RESULT mode=bn|syncbn pass=P step_ms=X
// Environment: the usual RANK/WORLD_SIZE/MASTER_*; arguments: BATCH SIZE STEPS WARMUP PASSES.
#include <ddp/init.h>

#include <cstdlib>
#include <iostream>

#include "common/resnet_modes.h"

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
  std::vector<ddp::bench::ResNetMode> modes;
  for (bool sync : {false, true}) {
    modes.push_back(ddp::bench::make_resnet_mode(
        sync ? "syncbn" : "bn", pg, 10,
        ddp::models::ResNetOptions(ddp::models::ResNetArch::kResNet18).sync_bn_group(sync ? pg : nullptr)));
  }
  ddp::bench::time_modes(*pg, modes, x, y, steps, warmup, passes, [&](ddp::bench::ResNetMode& m, int pass, double ms) {
    if (pg->rank() == 0) std::cout << "RESULT mode=" << m.name << " pass=" << pass << " step_ms=" << ms << std::endl;
  });
  return 0;
}

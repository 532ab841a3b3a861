// bench_powersgd: one rank's side of bench/powersgd/run.py. A DDP training step of ResNet-18 (ddp's
// models library, 1000 classes: torchvision's resnet18) with DDP's allreduce and with
// ddp::comm_hooks::powersgd of each rank asked for, in alternating passes so machine drift touches
// every mode alike. PowerSGD starts compressing at step 2 (start_iter), inside the warm-up, so the
// timed steps are compressed ones. Rank 0 prints one line per pass and mode:
//   RESULT mode=allreduce|powersgd1|... pass=P step_ms=X floats=F
// F: the elements this rank hands to allreduce per step (the gradients, or PowerSGD's P and Q plus
// the gradients it leaves uncompressed: its compression_stats() over the pass); bytes on the wire
// are 4 F times the allreduce algorithm's own factor, the same for every mode.
// Environment: the usual RANK/WORLD_SIZE/MASTER_*; arguments: BATCH SIZE STEPS WARMUP PASSES RANKS
// (RANKS: comma-separated PowerSGD ranks, e.g. 1,2,4).
#include <ddp/init.h>
#include <ddp/powersgd_hook.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "common/resnet_modes.h"

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: bench_powersgd BATCH SIZE STEPS WARMUP PASSES RANKS\n";
    return 2;
  }
  const int64_t batch = std::atol(argv[1]), size = std::atol(argv[2]);
  const int steps = std::atoi(argv[3]), warmup = std::atoi(argv[4]), passes = std::atoi(argv[5]);
  std::vector<int64_t> ranks = {0};  // 0: DDP's allreduce
  std::istringstream list(argv[6]);
  for (std::string r; std::getline(list, r, ',');) ranks.push_back(std::stoll(r));
  torch::set_num_threads(1);
  at::set_num_interop_threads(1);
  auto pg = ddp::init_process_group();
  torch::manual_seed(pg->rank());
  const at::Tensor x = torch::randn({batch, 3, size, size});
  const at::Tensor y = torch::randint(0, 1000, {batch});
  std::vector<ddp::bench::ResNetMode> modes;
  std::map<std::string, std::shared_ptr<ddp::comm_hooks::PowerSGDState>> powersgd;
  for (int64_t r : ranks) {
    modes.push_back(ddp::bench::make_resnet_mode(r == 0 ? "allreduce" : "powersgd" + std::to_string(r), pg, 1000));
    if (r > 0) {
      auto state = std::make_shared<ddp::comm_hooks::PowerSGDState>(
          pg, ddp::comm_hooks::PowerSGDOptions().matrix_approximation_rank(r).start_iter(2));
      modes.back().model->register_comm_hook(ddp::comm_hooks::powersgd(state));
      powersgd[modes.back().name] = state;
    }
  }
  int64_t gradient_floats = 0;
  for (const auto& p : modes[0].net->parameters()) gradient_floats += p.numel();
  // PowerSGD's elements after compression when a pass starts, for the difference over the pass.
  std::map<std::string, int64_t> at_start;
  auto after = [&](const std::string& name) {
    auto it = powersgd.find(name);
    return it == powersgd.end() ? int64_t{0} : it->second->compression_stats().numel_after;
  };
  ddp::bench::time_modes(
      *pg, modes, x, y, steps, warmup, passes,
      [&](ddp::bench::ResNetMode& m, int pass, double ms) {
        const int64_t floats = powersgd.count(m.name) ? (after(m.name) - at_start[m.name]) / steps : gradient_floats;
        if (pg->rank() == 0)
          std::cout << "RESULT mode=" << m.name << " pass=" << pass << " step_ms=" << ms << " floats=" << floats
                    << std::endl;
      },
      [&](ddp::bench::ResNetMode& m) { at_start[m.name] = after(m.name); });
  return 0;
}

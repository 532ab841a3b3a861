#pragma once
// What bench/sync_bn and bench/powersgd share: ResNet-18 under our DDP in several modes, one
// training step (zero_grad, forward, cross-entropy, backward, SGD with momentum), and the timing of
// the modes in alternating passes, so that drift in the machine's load touches every mode alike.
#include <ddp/distributed_data_parallel.h>
#include <ddp/process_group.h>

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/resnet.h"

namespace ddp::bench {

struct ResNetMode {
  std::string name;
  models::ResNet net{nullptr};
  std::shared_ptr<DistributedDataParallel<models::ResNet>> model;
  std::shared_ptr<torch::optim::SGD> opt;
};

/// A ResNet-18 of `classes` classes, seeded with 0 (the same on every rank and mode), under DDP;
/// `options` may change the network (e.g. its BatchNorm).
inline ResNetMode make_resnet_mode(std::string name, const std::shared_ptr<ProcessGroup>& pg, int64_t classes,
                                   models::ResNetOptions options = models::ResNetOptions(models::ResNetArch::kResNet18)) {
  torch::manual_seed(0);
  ResNetMode m;
  m.name = std::move(name);
  m.net = models::ResNet(options.num_classes(classes));
  m.model = std::make_shared<DistributedDataParallel<models::ResNet>>(m.net, pg);
  m.opt = std::make_shared<torch::optim::SGD>(m.net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  return m;
}

inline void train_step(ResNetMode& m, const at::Tensor& x, const at::Tensor& y) {
  m.opt->zero_grad();
  torch::nn::functional::cross_entropy((*m.model)(x), y).backward();
  m.opt->step();
}

/// `warmup` steps of every mode, then `passes` passes over the modes of `steps` steps each, timed
/// between barriers (so a pass waits for the slowest rank); `report(mode, pass, ms per step)` on
/// every rank after each, and `before_pass(mode)` (when given) just before each.
inline void time_modes(ProcessGroup& pg, std::vector<ResNetMode>& modes, const at::Tensor& x, const at::Tensor& y,
                       int steps, int warmup, int passes,
                       const std::function<void(ResNetMode&, int, double)>& report,
                       const std::function<void(ResNetMode&)>& before_pass = nullptr) {
  for (auto& m : modes)
    for (int i = 0; i < warmup; ++i) train_step(m, x, y);
  for (int pass = 0; pass < passes; ++pass) {
    for (auto& m : modes) {
      if (before_pass) before_pass(m);
      pg.barrier()->wait();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) train_step(m, x, y);
      pg.barrier()->wait();
      report(m, pass, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
    }
  }
}

}  // namespace ddp::bench

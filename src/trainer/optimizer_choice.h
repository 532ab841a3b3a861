#pragma once
// The trainer's optimizer, plain or sharded across the ranks (--zero): one place that builds either,
// so the apps hold a torch::optim::Optimizer and never ask which. Checkpoints need no care: the
// Checkpointer writes a ZeroRedundancyOptimizer's state in the plain format (zero_redundancy_optimizer.h).
//
//   auto opt = ddp::trainer::make_optimizer(o.runtime.zero(), params, pg, [&](auto groups) {
//     return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(o.lr));
//   });
#include <ddp/zero_redundancy_optimizer.h>

#include <memory>
#include <vector>

namespace ddp::trainer {

/// `make(params)` itself, or with `zero` a ZeroRedundancyOptimizer of it over `pg` (each rank logs how
/// many parameters and elements it updates).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(bool zero, std::vector<at::Tensor> params,
                                                        const std::shared_ptr<ProcessGroup>& pg,
                                                        const ZeroRedundancyOptimizer::OptimizerFactory& make);

}  // namespace ddp::trainer

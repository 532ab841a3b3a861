#include "trainer/optimizer_choice.h"

#include <ddp/logging.h>
#include <ddp/process_group.h>

namespace ddp::trainer {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(bool zero, std::vector<at::Tensor> params,
                                                        const std::shared_ptr<ProcessGroup>& pg,
                                                        const ZeroRedundancyOptimizer::OptimizerFactory& make) {
  if (!zero) return make({torch::optim::OptimizerParamGroup(std::move(params))});
  auto sharded = std::make_unique<ZeroRedundancyOptimizer>(std::move(params), make, pg);
  int64_t mine = 0, all = 0, count = 0;
  size_t i = 0;
  for (const auto& group : sharded->param_groups())
    for (const auto& p : group.params()) {
      all += p.numel();
      if (sharded->owners()[i++] == pg->rank()) {
        mine += p.numel();
        ++count;
      }
    }
  DDP_LOG(INFO) << "--zero: optimizer state sharded over " << pg->size() << " ranks; this rank updates " << count
                << " of " << i << " parameters (" << mine << " of " << all << " elements)";
  return sharded;
}

}  // namespace ddp::trainer

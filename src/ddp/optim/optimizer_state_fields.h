#pragma once
// The tensors inside a LibTorch optimizer's per-parameter state. LibTorch's state classes do not
// list them, so the known ones are read here, once: SGD, Adam, AdamW, Adagrad, RMSprop.
#include <torch/optim/optimizer.h>

#include <functional>

namespace ddp::detail {

/// Calls `field(tensor, set)` for each tensor field of `state` (undefined ones too); `set(t)` stores
/// `t` in its place. False for a state class not listed above.
bool for_each_state_field(torch::optim::OptimizerParamState& state,
                          const std::function<void(const at::Tensor&, const std::function<void(at::Tensor)>&)>& field);

/// Every state tensor of `optimizer` moved to its parameter's device (a checkpoint is read onto the
/// CPU; a CUDA run steps with its state on the GPU). States of unlisted classes are left as they are.
void move_optimizer_state_to_parameters(torch::optim::Optimizer& optimizer);

}  // namespace ddp::detail

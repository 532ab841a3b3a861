#include "ddp/optim/optimizer_state_fields.h"

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "ddp/optim/optimizer_state_key.h"

namespace ddp::detail {

bool for_each_state_field(torch::optim::OptimizerParamState& state,
                          const std::function<void(const at::Tensor&, const std::function<void(at::Tensor)>&)>& field) {
  using namespace torch::optim;
  // Each TORCH_ARG field has a getter and a setter of the same name.
#define DDP_STATE_FIELD(s, name) field(s->name(), [s](at::Tensor t) { s->name(std::move(t)); })
  if (auto* sgd = dynamic_cast<SGDParamState*>(&state)) {
    DDP_STATE_FIELD(sgd, momentum_buffer);
  } else if (auto* adam = dynamic_cast<AdamParamState*>(&state)) {
    DDP_STATE_FIELD(adam, exp_avg);
    DDP_STATE_FIELD(adam, exp_avg_sq);
    DDP_STATE_FIELD(adam, max_exp_avg_sq);
  } else if (auto* adamw = dynamic_cast<AdamWParamState*>(&state)) {
    DDP_STATE_FIELD(adamw, exp_avg);
    DDP_STATE_FIELD(adamw, exp_avg_sq);
    DDP_STATE_FIELD(adamw, max_exp_avg_sq);
  } else if (auto* adagrad = dynamic_cast<AdagradParamState*>(&state)) {
    DDP_STATE_FIELD(adagrad, sum);
  } else if (auto* rms = dynamic_cast<RMSpropParamState*>(&state)) {
    DDP_STATE_FIELD(rms, square_avg);
    DDP_STATE_FIELD(rms, momentum_buffer);
    DDP_STATE_FIELD(rms, grad_avg);
  } else {
    return false;
  }
#undef DDP_STATE_FIELD
  return true;
}

void move_optimizer_state_to_parameters(torch::optim::Optimizer& optimizer) {
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params()) {
      auto found = optimizer.state().find(optimizer_state_key(p));
      if (found == optimizer.state().end()) continue;
      for_each_state_field(*found->second, [&](const at::Tensor& t, const std::function<void(at::Tensor)>& set) {
        if (t.defined() && t.device() != p.device()) set(t.to(p.device()));
      });
    }
}

}  // namespace ddp::detail

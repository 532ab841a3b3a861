// optimizer_state_bytes: what an optimizer keeps per parameter, for ZeRO's memory claims (bench/zero)
// and logs. LibTorch's state classes do not list their tensors, so each known class is read here.
#include <ddp/errors.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <initializer_list>
#include <typeinfo>

namespace ddp {
namespace {

int64_t bytes_of(std::initializer_list<const at::Tensor*> tensors) {
  int64_t n = 0;
  for (const at::Tensor* t : tensors)
    if (t->defined()) n += static_cast<int64_t>(t->nbytes());
  return n;
}

int64_t state_bytes(const torch::optim::OptimizerParamState& s) {
  using namespace torch::optim;
  if (auto* sgd = dynamic_cast<const SGDParamState*>(&s)) return bytes_of({&sgd->momentum_buffer()});
  if (auto* adam = dynamic_cast<const AdamParamState*>(&s))
    return bytes_of({&adam->exp_avg(), &adam->exp_avg_sq(), &adam->max_exp_avg_sq()});
  if (auto* adamw = dynamic_cast<const AdamWParamState*>(&s))
    return bytes_of({&adamw->exp_avg(), &adamw->exp_avg_sq(), &adamw->max_exp_avg_sq()});
  if (auto* adagrad = dynamic_cast<const AdagradParamState*>(&s)) return bytes_of({&adagrad->sum()});
  if (auto* rms = dynamic_cast<const RMSpropParamState*>(&s))
    return bytes_of({&rms->square_avg(), &rms->momentum_buffer(), &rms->grad_avg()});
  throw ConfigError(std::string("optimizer_state_bytes: unknown optimizer state type ") + typeid(s).name());
}

}  // namespace

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  if (auto* zero = dynamic_cast<const ZeroRedundancyOptimizer*>(&optimizer))
    return optimizer_state_bytes(zero->local_optimizer());
  int64_t n = 0;
  for (const auto& [key, state] : optimizer.state()) n += state_bytes(*state);
  return n;
}

}  // namespace ddp

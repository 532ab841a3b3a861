// torch_state_dict: a LibTorch optimizer's state in the layout of PyTorch's Optimizer.state_dict(),
// so Python can load what a C++ run saved (docs/DDP.md, ZeroRedundancyOptimizer). torch::pickle_save
// tags every dict with torch.jit._pickle.restore_type_tag; torch 2.6's torch.load (weights_only by
// default) needs that one function allowed (torch.serialization.safe_globals). The names are
// torch's (torch/optim/sgd.py, adam.py, adamw.py in 1.13 and 2.6); options LibTorch lacks get the
// value that behaves as LibTorch does ("maximize": False). Keys a torch version adds and LibTorch
// does not know (foreach, capturable, differentiable, fused) are left out: torch's load_state_dict
// keeps the loading optimizer's own values for them.
#include <ddp/errors.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <typeinfo>

#include "ddp/optim/optimizer_state_key.h"

namespace ddp {
namespace {

using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;
using Group = c10::impl::GenericDict;  // Dict[str, Any]

Group new_group() { return Group(c10::StringType::get(), c10::AnyType::get()); }
using State = c10::Dict<std::string, at::Tensor>;

// One of the Adam family's options: the same names in torch's Adam and AdamW.
template <typename Options>
void adam_options(const Options& o, Group& g) {
  g.insert("lr", o.lr());
  g.insert("betas", c10::ivalue::Tuple::create(std::get<0>(o.betas()), std::get<1>(o.betas())));
  g.insert("eps", o.eps());
  g.insert("weight_decay", o.weight_decay());
  g.insert("amsgrad", o.amsgrad());
  g.insert("maximize", false);
}

Group group_options(const OptimizerOptions& options) {
  Group g = new_group();
  if (auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&options)) {
    g.insert("lr", sgd->lr());
    g.insert("momentum", sgd->momentum());
    g.insert("dampening", sgd->dampening());
    g.insert("weight_decay", sgd->weight_decay());
    g.insert("nesterov", sgd->nesterov());
    g.insert("maximize", false);
  } else if (auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&options)) {
    adam_options(*adam, g);
  } else if (auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&options)) {
    adam_options(*adamw, g);
  } else {
    throw ConfigError(std::string("torch_state_dict: no PyTorch layout for the options ") + typeid(options).name() +
                      " (SGD, Adam and AdamW have one)");
  }
  return g;
}

// Adam's step count, as torch keeps it since 1.12: a float32 scalar tensor.
template <typename AdamState>
void adam_state(const AdamState& s, State& out) {
  out.insert("step", at::scalar_tensor(static_cast<double>(s.step()), at::kFloat));
  out.insert("exp_avg", s.exp_avg());
  out.insert("exp_avg_sq", s.exp_avg_sq());
  if (s.max_exp_avg_sq().defined()) out.insert("max_exp_avg_sq", s.max_exp_avg_sq());
}

State param_state(const OptimizerParamState& s) {
  State out;
  if (auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(&s)) {
    if (sgd->momentum_buffer().defined()) out.insert("momentum_buffer", sgd->momentum_buffer());
  } else if (auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(&s)) {
    adam_state(*adam, out);
  } else if (auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&s)) {
    adam_state(*adamw, out);
  } else {
    throw ConfigError(std::string("torch_state_dict: no PyTorch layout for the state ") + typeid(s).name());
  }
  return out;
}

}  // namespace

c10::IValue torch_state_dict(const torch::optim::Optimizer& optimizer) {
  const auto* zero = dynamic_cast<const ZeroRedundancyOptimizer*>(&optimizer);
  const torch::optim::Optimizer& opt = zero ? zero->consolidated_optimizer() : optimizer;
  c10::Dict<int64_t, State> state;
  c10::impl::GenericList groups(c10::DictType::create(c10::StringType::get(), c10::AnyType::get()));
  int64_t index = 0;
  for (const auto& group : opt.param_groups()) {
    Group g = group_options(group.options());
    // A List[Any], not a List[int]: LibTorch pickles an int list through torch.jit._pickle's
    // build_intlist, which torch 2.6's weights_only load refuses.
    c10::impl::GenericList params(c10::AnyType::get());
    for (const auto& p : group.params()) {
      auto found = opt.state().find(detail::optimizer_state_key(p));
      if (found != opt.state().end()) {
        State s = param_state(*found->second);
        if (s.size() > 0) state.insert(index, s);
      }
      params.push_back(index++);
    }
    g.insert("params", params);
    groups.push_back(g);
  }
  Group out = new_group();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace ddp

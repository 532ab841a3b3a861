#pragma once
// The key under which a LibTorch optimizer keeps a parameter's state: the address of its TensorImpl,
// as a string up to LibTorch 1.13 (c10::guts::to_string, an ostream of the pointer) and as the
// pointer itself in 2.x. One spelling for both versions.
#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace ddp::detail {

using OptimizerStateMap = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
using OptimizerStateKey = OptimizerStateMap::key_type;

template <typename Key = OptimizerStateKey>
Key optimizer_state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace ddp::detail

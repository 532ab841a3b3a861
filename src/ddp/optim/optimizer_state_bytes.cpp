// optimizer_state_bytes: what an optimizer keeps per parameter, for ZeRO's memory claims (bench/zero)
// and logs.
#include <ddp/errors.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <typeinfo>

#include "ddp/optim/optimizer_state_fields.h"

namespace ddp {

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  if (auto* zero = dynamic_cast<const ZeroRedundancyOptimizer*>(&optimizer))
    return optimizer_state_bytes(zero->local_optimizer());
  int64_t n = 0;
  for (const auto& [key, state] : optimizer.state()) {
    // Read only: the setter for_each_state_field offers is not called.
    const bool known = detail::for_each_state_field(*state, [&](const at::Tensor& t, const auto&) {
      if (t.defined()) n += static_cast<int64_t>(t.nbytes());
    });
    if (!known) throw ConfigError(std::string("optimizer_state_bytes: unknown optimizer state type ") + typeid(*state).name());
  }
  return n;
}

}  // namespace ddp

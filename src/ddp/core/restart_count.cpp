#include "ddp/core/restart_count.h"

namespace ddp::detail {

int restart_count_from_env(const EnvMap& env) {
  auto v = env_get(env, "TORCHELASTIC_RESTART_COUNT");
  return v ? static_cast<int>(parse_env_int("TORCHELASTIC_RESTART_COUNT", *v, 0, 1 << 30)) : 0;
}

}  // namespace ddp::detail

#include "ddp/core/restart_count.h"

#include "util/numbers.h"

namespace ddp::detail {

int restart_count_from_env(const util::EnvMap& env) {
  auto v = util::env_get(env, "TORCHELASTIC_RESTART_COUNT");
  return v ? static_cast<int>(util::parse_int("TORCHELASTIC_RESTART_COUNT", *v, 0, 1 << 30)) : 0;
}

}  // namespace ddp::detail

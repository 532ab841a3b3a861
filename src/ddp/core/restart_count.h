#pragma once
// The launcher's restart attempt (TORCHELASTIC_RESTART_COUNT), read in one place: WorldInfo's
// torchrun rule and the default of NcclOptions::restart_count both ask here.

#include "util/env.h"

namespace ddp::detail {

/// TORCHELASTIC_RESTART_COUNT, a count in [0, 2^30]; 0 when unset or empty. ConfigError naming the
/// variable and its value otherwise.
int restart_count_from_env(const util::EnvMap& env);

}  // namespace ddp::detail

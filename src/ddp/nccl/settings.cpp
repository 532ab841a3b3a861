#include "ddp/nccl/settings.h"

#include <ddp/logging.h>

#include <string>
#include <vector>

namespace ddp::nccl_backend {
namespace {

/// One name for a setting; `inverted` when the variable says the opposite (AVOID_RECORD_STREAMS).
struct Spelling {
  const char* name;
  bool inverted;
};

/// The first set spelling decides. Every set one is validated, so a typo in a losing variable is
/// still reported rather than silently ignored.
std::optional<bool> resolve(const util::EnvMap& env, const std::vector<Spelling>& spellings) {
  std::optional<bool> chosen;
  std::string chosen_setting;  // "NAME=value", for the warning
  for (const auto& s : spellings) {
    auto raw = util::env_get(env, s.name);
    if (!raw) continue;
    const bool value = util::parse_bool(s.name, *raw) != s.inverted;
    const std::string setting = std::string(s.name) + "=" + *raw;
    if (!chosen) {
      chosen = value;
      chosen_setting = setting;
    } else if (value != *chosen) {
      DDP_LOG(WARN) << chosen_setting << " and " << setting << " disagree; using " << chosen_setting;
    }
  }
  return chosen;
}

}  // namespace

std::optional<bool> blocking_wait_from_env(const util::EnvMap& env) {
  return resolve(env, {{"DDP_NCCL_BLOCKING_WAIT", false}, {"TORCH_NCCL_BLOCKING_WAIT", false},
                       {"NCCL_BLOCKING_WAIT", false}});
}

bool record_streams_from_env(const util::EnvMap& env) {
  return resolve(env, {{"DDP_NCCL_RECORD_STREAMS", false}, {"TORCH_NCCL_AVOID_RECORD_STREAMS", true}}).value_or(true);
}

}  // namespace ddp::nccl_backend

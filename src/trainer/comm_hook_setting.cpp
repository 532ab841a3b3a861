#include "trainer/comm_hook_setting.h"

#include <ddp/errors.h>

#include "util/numbers.h"

namespace ddp::trainer {

std::string CommHookSetting::describe() const {
  if (kind != "powersgd") return kind;
  return "powersgd:" + std::to_string(powersgd_rank) + " (from step " + std::to_string(powersgd_start_iter) + ")";
}

CommHookSetting parse_comm_hook(const std::string& comm_hook, const std::string& powersgd_start_iter) {
  CommHookSetting s;
  const std::string prefix = "powersgd:";
  if (comm_hook == "none" || comm_hook == "fp16" || comm_hook == "bf16") {
    s.kind = comm_hook;
  } else if (comm_hook.compare(0, prefix.size(), prefix) == 0) {
    s.kind = "powersgd";
    s.powersgd_rank = util::parse_int("--comm-hook powersgd:RANK", comm_hook.substr(prefix.size()), 1, 1 << 20);
  } else {
    throw ConfigError("--comm-hook='" + comm_hook + "': expected none, fp16, bf16 or powersgd:RANK (e.g. powersgd:2)");
  }
  // PowerSGD's warm start and error feedback need the buckets DDP rebuilds after step 1 (torch's rule).
  s.powersgd_start_iter = util::parse_int("--powersgd-start-iter", powersgd_start_iter, 2, INT64_C(1) << 40);
  return s;
}

}  // namespace ddp::trainer

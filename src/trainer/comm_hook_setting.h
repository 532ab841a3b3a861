#pragma once
// The value of --comm-hook and --powersgd-start-iter (trainer/comm_hook_choice.h puts it to work).

#include <cstdint>
#include <string>

namespace ddp::trainer {

struct CommHookSetting {
  std::string kind = "none";  ///< none | fp16 | bf16 | powersgd
  int64_t powersgd_rank = 0;
  int64_t powersgd_start_iter = 1000;
  /// "none", "fp16", "powersgd:2 (from step 1000)".
  std::string describe() const;
};

/// Reads --comm-hook and --powersgd-start-iter. ConfigError naming the flag and value.
CommHookSetting parse_comm_hook(const std::string& comm_hook, const std::string& powersgd_start_iter);

}  // namespace ddp::trainer

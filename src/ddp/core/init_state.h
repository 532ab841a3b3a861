#pragma once
// What init_process_group() remembers, shared with default_device().

namespace ddp::detail {

/// LOCAL_RANK of the last init_process_group(), else the environment's (ConfigError when bad).
int local_rank_for_device();

}  // namespace ddp::detail

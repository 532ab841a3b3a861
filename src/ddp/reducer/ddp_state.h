#pragma once
// What a DistributedDataParallel holds (behind DistributedDataParallelBase's pointer), shared by
// distributed_data_parallel.cpp (construction, forward, no_sync) and join.cpp (uneven inputs).

#include <ddp/distributed_data_parallel.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "ddp/reducer/reducer.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ddp::detail {

/// join()'s state while its loop runs on a rank that still has inputs.
struct JoinRun {
  bool active = false;
  JoinOptions options;
  // The allreduces each forward issues without waiting (the group's count of ranks still
  // training; whether this step's backward is synchronized), kept alive until they finish.
  at::Tensor notify, requires_sync;
  WorkPtr notify_work, requires_sync_work;
};

struct DdpState {
  std::shared_ptr<torch::nn::Module> module;
  std::shared_ptr<ProcessGroup> pg;
  DistributedDataParallelOptions options;
  std::vector<std::string> names;  ///< reduced parameters
  std::unique_ptr<Reducer> reducer;
  bool require_sync = true;
  JoinRun join;
};

/// Join, first thing in a forward of a rank that still trains: tells the group so (throwing
/// DataError when throw_on_early_termination and some rank has run out), and sets this step's
/// gradient divisor.
void join_pre_forward(DdpState& s);
/// Join, last thing before the module's forward: tells the joined ranks whether this step's
/// backward is synchronized (`sync`: not under no_sync()).
void join_announce_sync(DdpState& s, bool sync);
/// Collective: the highest rank for which `candidate` is true (PyTorch's _find_common_rank).
int highest_rank_where(ProcessGroup& pg, bool candidate);

}  // namespace ddp::detail

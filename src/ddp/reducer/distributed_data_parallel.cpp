// DistributedDataParallelBase: the module-facing glue around the Reducer (parameter discovery,
// model checks and broadcasts, buffers before each forward, no_sync).
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <c10/core/GradMode.h>
#include <torch/nn/module.h>

#include <unordered_set>

#include "ddp/reducer/ddp_state.h"
#include "ddp/reducer/model_sync.h"

namespace ddp {

NoSyncGuard::NoSyncGuard(detail::DdpState* state) : state_(state), previous_(state->require_sync) {
  state_->require_sync = false;
}
NoSyncGuard::~NoSyncGuard() {
  if (state_) state_->require_sync = previous_;
}
NoSyncGuard::NoSyncGuard(NoSyncGuard&& other) noexcept : state_(other.state_), previous_(other.previous_) {
  other.state_ = nullptr;
}

DistributedDataParallelBase::DistributedDataParallelBase(std::shared_ptr<torch::nn::Module> module,
                                                         std::shared_ptr<ProcessGroup> pg,
                                                         DistributedDataParallelOptions options)
    : state_(std::make_unique<detail::DdpState>()) {
  if (!module) throw ConfigError("DistributedDataParallel: the module is null");
  if (!pg) throw ConfigError("DistributedDataParallel: the process group is null");
  state_->module = std::move(module);
  state_->pg = std::move(pg);
  state_->options = options;

  // Every parameter for the cross-rank check and the initial broadcast; the reduced ones are
  // those requiring grad, each tensor once (a shared parameter is registered under two names).
  std::vector<std::string> all_names;
  std::vector<at::Tensor> all_params, reduced;
  std::unordered_set<const void*> seen;
  for (const auto& item : state_->module->named_parameters(/*recurse=*/true)) {
    all_names.push_back(item.key());
    all_params.push_back(item.value());
    if (item.value().requires_grad() && seen.insert(item.value().unsafeGetTensorImpl()).second) {
      state_->names.push_back(item.key());
      reduced.push_back(item.value());
    }
  }
  ProcessGroup& group = *state_->pg;
  detail::verify_same_parameters(group, all_names, all_params);
  if (group.size() > 1) {
    std::vector<at::Tensor> states = all_params;
    for (const auto& b : state_->module->buffers(/*recurse=*/true)) states.push_back(b);
    detail::broadcast_coalesced(group, states, /*root=*/0);
  }
  state_->reducer = std::make_unique<detail::Reducer>(std::move(reduced), state_->names, state_->pg, options);
  DDP_LOG(DEBUG) << "DistributedDataParallel: " << state_->names.size() << " parameters in "
                 << state_->reducer->stats().buckets << " buckets"
                 << (options.static_graph() ? "; static_graph: learning the graph in the first backward" : "");
}

DistributedDataParallelBase::~DistributedDataParallelBase() = default;
DistributedDataParallelBase::DistributedDataParallelBase(DistributedDataParallelBase&&) noexcept = default;
DistributedDataParallelBase& DistributedDataParallelBase::operator=(DistributedDataParallelBase&&) noexcept =
    default;

bool DistributedDataParallelBase::pre_forward() {
  detail::DdpState& s = *state_;
  s.reducer->check_prior_iteration();
  const bool grad = at::GradMode::is_enabled();
  // Inside join(), the collectives in PyTorch's order: the count of ranks still training, the
  // rebuild, the buffers (from the highest rank still training), whether backward synchronizes.
  const bool joining = s.join.active;
  if (joining) detail::join_pre_forward(s);
  if (grad) s.reducer->rebuild_buckets_if_due();
  if (s.options.broadcast_buffers() && s.pg->size() > 1) {
    auto buffers = s.module->buffers(/*recurse=*/true);
    if (!buffers.empty())
      detail::broadcast_coalesced(*s.pg, buffers, joining ? detail::highest_rank_where(*s.pg, true) : 0);
  }
  if (joining) detail::join_announce_sync(s, s.require_sync);
  return grad && s.require_sync;
}

void DistributedDataParallelBase::post_forward(const std::vector<at::Tensor>& outputs, bool outputs_complete) {
  state_->reducer->prepare_for_backward(outputs, outputs_complete);
}

NoSyncGuard DistributedDataParallelBase::no_sync() { return NoSyncGuard(state_.get()); }

void DistributedDataParallelBase::register_comm_hook(CommHook hook) {
  if (!hook) throw ConfigError("DistributedDataParallel::register_comm_hook: the hook is empty");
  state_->reducer->register_comm_hook(std::move(hook));
}

ProcessGroup& DistributedDataParallelBase::process_group() const { return *state_->pg; }
const DistributedDataParallelOptions& DistributedDataParallelBase::options() const {
  return state_->options;
}
const std::vector<std::string>& DistributedDataParallelBase::parameter_names() const {
  return state_->names;
}
std::vector<std::vector<int64_t>> DistributedDataParallelBase::bucket_indices() const {
  return state_->reducer->bucket_indices();
}

void DistributedDataParallelBase::set_bucket_indices(const std::vector<std::vector<int64_t>>& buckets) {
  state_->reducer->set_bucket_indices(buckets);
}
DistributedDataParallelStats DistributedDataParallelBase::stats() const {
  return state_->reducer->stats();
}

}  // namespace ddp

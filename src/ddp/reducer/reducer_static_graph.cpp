// Reducer: static_graph (PyTorch's DistributedDataParallel(static_graph=True)).
//
// The first synchronized backward is only watched: each parameter's accumulator hook counts how
// often it fires (twice for a layer that runs once in the graph and again in a nested backward,
// as activation checkpointing does; a layer applied twice in one graph fires once, autograd sums
// its two gradients first), and everything is reduced at the end of that backward. The counts are
// the graph. From the second backward on, a parameter is ready after its last accumulation, and
// those that fired 0 times are ready as soon as backward starts, with no graph search.
//
// A graph that changes (a count differs) is reported, never left to hang a peer: the backward
// still completes every bucket, the end-of-backward allreduce carries one flag per parameter
// and rank, and every rank throws the same ConfigError from backward, naming the parameters.
#include <ddp/errors.h>

#include <algorithm>
#include <sstream>

#include "ddp/reducer/autograd_compat.h"
#include "ddp/reducer/reducer.h"

namespace ddp::detail {

void Reducer::static_graph_on_grad_ready(size_t var) {
  ++fires_[var];
  if (!learned()) return;  // first iteration: count only, reduce at the end
  if (fires_[var] == expected_fires_[var]) mark_ready(var, /*produced=*/true);
}

void Reducer::static_graph_hook_outputs(const std::vector<at::Tensor>& outputs) {
  // The finalize callback must be queued on the outer backward: the first accumulator hook may
  // run inside a nested backward (checkpointing), whose callbacks run when it ends, long before
  // the outer one has produced every gradient. The outputs' gradients are computed in the outer
  // backward before anything in the module (PyTorch's _DDPSink plays this part). Outputs DDP
  // cannot see (an unknown output type) leave it to the first accumulator hook, as without
  // static_graph.
  if (params_.empty()) return;
  std::weak_ptr<char> alive = alive_;
  for (const auto& t : outputs) {
    autograd_compat::add_output_gradient_hook(t, [this, alive] {
      if (alive.expired()) return;  // the graph outlived its DistributedDataParallel
      std::lock_guard<std::mutex> lock(mutex_);
      if (armed_ && !backward_started_) start_backward(params_.size());
    });
  }
}

void Reducer::static_graph_finish_marking() {
  const size_t n = params_.size();
  if (!learned()) {
    // The first iteration: what autograd did is the graph. Every gradient goes into its bucket
    // now, in parameter order (PyTorch's delay_all_reduce), launching the buckets in order.
    expected_fires_.assign(fires_.begin(), fires_.end());
    for (size_t v = 0; v < n; ++v) mark_ready(v, /*produced=*/fires_[v] > 0);
    return;
  }
  for (size_t v = 0; v < n; ++v)
    if (fires_[v] != expected_fires_[v]) changed_.push_back(v);
  // Fewer accumulations than learned: complete the bucket with what there is, so that every
  // rank still issues the same collectives (the error follows on every rank).
  for (size_t v = 0; v < n; ++v)
    if (!ready_[v]) mark_ready(v, /*produced=*/fires_[v] > 0);
  // The rebuild's order: the used parameters as they became ready, then the unused ones.
  if (record_order_)
    for (size_t v = 0; v < n; ++v)
      if (expected_fires_[v] == 0) arrival_order_.push_back(v);
}

int64_t Reducer::flags_size() const {
  const auto n = static_cast<int64_t>(params_.size());
  if (options_.static_graph()) return 2 * n;
  return options_.find_unused_parameters() ? n : 0;
}

void Reducer::fill_flags(int32_t* flags) const {
  const size_t n = params_.size();
  if (!options_.static_graph()) {
    for (size_t v = 0; v < n; ++v) flags[v] = produced_[v];
    return;
  }
  // Used as learned: a parameter no rank used in the first iteration keeps its gradient
  // untouched (undefined stays undefined) in every iteration, as in PyTorch.
  for (size_t v = 0; v < n; ++v) flags[v] = expected_fires_[v] > 0 ? 1 : 0;
  for (size_t v = 0; v < n; ++v) flags[n + v] = 0;
  for (size_t v : changed_) flags[n + v] = 1;
}

std::string Reducer::static_graph_error(const std::vector<int32_t>& summed_flags) const {
  const size_t n = params_.size();
  if (summed_flags.size() != 2 * n) return {};
  std::vector<size_t> changed;
  for (size_t v = 0; v < n; ++v)
    if (summed_flags[n + v] > 0) changed.push_back(v);
  if (changed.empty()) return {};
  std::ostringstream m;
  m << "DistributedDataParallel: static_graph: the autograd graph changed after the first "
       "iteration, and static_graph needs it to stay the same. ";
  constexpr size_t kMaxNamed = 8;
  for (size_t i = 0; i < changed.size() && i < kMaxNamed; ++i) {
    const size_t v = changed[i];
    m << (i ? "; " : "") << "parameter '" << names_[v] << "' (index " << v << ")";
    if (std::find(changed_.begin(), changed_.end(), v) != changed_.end())
      m << " got its gradient " << fires_[v] << " time(s) in this backward on rank " << pg_->rank()
        << ", but " << expected_fires_[v] << " time(s) in the first iteration";
    m << " (changed on " << summed_flags[n + v] << " rank(s))";
  }
  if (changed.size() > kMaxNamed) m << "; and " << changed.size() - kMaxNamed << " more";
  m << ". This step's gradients are not the average. A parameter used in some iterations only, "
       "or whose gradient is accumulated a different number of times (e.g. checkpointing switched "
       "on or off), needs static_graph off (with find_unused_parameters if some go unused).";
  return m.str();
}

}  // namespace ddp::detail

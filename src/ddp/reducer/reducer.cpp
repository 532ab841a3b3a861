// Reducer: construction, grad-ready hooks and their bookkeeping.
#include "ddp/reducer/reducer.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <sstream>

#include "ddp/reducer/autograd_compat.h"
#include "ddp/reducer/bucket_assignment.h"

namespace ddp::detail {

Reducer::Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
                 std::shared_ptr<ProcessGroup> pg, const DistributedDataParallelOptions& options)
    : params_(std::move(params)), names_(std::move(names)), pg_(std::move(pg)), options_(options) {
  caps_ = {mib_to_bytes(options_.first_bucket_cap_mb(), "first_bucket_cap_mb"),
           mib_to_bytes(options_.bucket_cap_mb(), "bucket_cap_mb")};
  const size_t n = params_.size();
  ready_.assign(n, 0);
  produced_.assign(n, 0);
  fires_.assign(n, 0);
  // static_graph learns in the first iteration and records the arrival order in the second
  // (the first is reduced only at its end, so it has no arrival order).
  record_order_ = !options_.static_graph();
  if (options_.static_graph() && options_.find_unused_parameters()) {
    DDP_LOG(WARN) << "DistributedDataParallel: static_graph finds the unused parameters in the first "
                     "iteration; find_unused_parameters is not needed with it and is ignored";
  }
  if (n == 0) return;  // nothing to reduce; hooks never fire

  for (const auto& p : params_) {
    if (p.is_sparse())
      throw ConfigError("DistributedDataParallel: sparse parameters are not supported");
  }

  // The divide by the world size is fused into the copy into the bucket (a wrapped scalar keeps
  // the gradient's dtype and may live on the CPU whatever the gradient's device).
  inverse_world_size_ = at::scalar_tensor(1.0 / pg_->size(), at::TensorOptions().dtype(at::kDouble));
  inverse_world_size_.unsafeGetTensorImpl()->set_wrapped_number(true);

  build_buckets(initial_assignment());

  // A post hook on each gradient accumulator: it runs once autograd has written .grad.
  accumulators_.resize(n);
  hook_keys_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    accumulators_[v] = autograd_compat::grad_accumulator(params_[v]);
    hook_keys_[v] = autograd_compat::add_grad_ready_hook(*accumulators_[v], [this, v] { on_grad_ready(v); });
    accumulator_index_[accumulators_[v].get()] = v;
  }
}

Reducer::~Reducer() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t v = 0; v < accumulators_.size(); ++v)
    if (accumulators_[v]) autograd_compat::remove_grad_ready_hook(*accumulators_[v], hook_keys_[v]);
  // Reductions still in flight write into our buckets: let them finish before the memory goes.
  for (auto& b : buckets_) {
    try {
      if (b.work) b.work->wait();
    } catch (const std::exception& e) {
      DDP_LOG(WARN) << "DistributedDataParallel: a reduction failed during shutdown: " << e.what();
    }
  }
}

std::vector<std::vector<size_t>> Reducer::initial_assignment() const {
  // Reverse registration order approximates the order backward produces gradients in.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  std::vector<int> group;
  std::vector<int64_t> bytes;
  bucket_groups(params_, group, bytes);
  return assign_buckets(order, group, bytes, caps_);
}

void Reducer::build_buckets(const std::vector<std::vector<size_t>>& assignment) {
  std::vector<Bucket> buckets;
  locator_.assign(params_.size(), {0, 0});
  for (size_t b = 0; b < assignment.size(); ++b) {
    buckets.push_back(make_bucket(params_, assignment[b]));
    for (size_t s = 0; s < assignment[b].size(); ++s) locator_[assignment[b][s]] = {b, s};
  }
  buckets_ = std::move(buckets);
  stats_.buckets = static_cast<int64_t>(buckets_.size());
  stats_.bucket_bytes = 0;
  for (const auto& b : buckets_) stats_.bucket_bytes += b.buffer.numel() * b.buffer.element_size();

  if (options_.gradient_as_bucket_view()) {
    // Existing gradients move into the bucket and from now on live there.
    at::NoGradGuard no_grad;
    for (size_t v = 0; v < params_.size(); ++v) {
      at::Tensor& grad = params_[v].mutable_grad();
      const at::Tensor& view = buckets_[locator_[v].first].views[locator_[v].second];
      if (grad.defined()) {
        view.copy_(grad);
        grad = view;
      }
    }
  }
}

void Reducer::register_comm_hook(CommHook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_hook_) throw ConfigError("DistributedDataParallel: a comm hook is already registered");
  if (stats_.synced_iterations > 0 || backward_started_)
    throw ConfigError("DistributedDataParallel: register the comm hook before the first backward");
  comm_hook_ = std::move(hook);
}

void Reducer::check_prior_iteration() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (backward_started_) {
    // The end-of-backward callback never ran: backward was interrupted by an exception.
    reset_iteration();
    throw ConfigError(
        "DistributedDataParallel: Expected to have finished reduction in the prior iteration "
        "before starting a new one, but the previous backward did not complete (it raised an "
        "error?). The model's gradients are not synchronized across ranks.");
  }
  armed_ = false;  // a forward without backward (e.g. evaluation with gradients on) is fine
  if (!pending_error_.empty()) {
    std::string message = std::move(pending_error_);
    pending_error_.clear();
    throw ConfigError(message);
  }
}

void Reducer::prepare_for_backward(const std::vector<at::Tensor>& outputs, bool outputs_complete) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  unreachable_.clear();
  if (options_.static_graph()) {
    static_graph_hook_outputs(outputs);
    return;  // no graph search: the unused parameters are learned
  }
  if (!options_.find_unused_parameters() || !outputs_complete || params_.empty()) return;
  // Parameters whose accumulator the outputs' graph does not reach get no gradient from this
  // backward: they are marked ready (as unused) as soon as backward starts, so their buckets
  // need not wait for the end of backward.
  auto reachable = autograd_compat::reachable_nodes(outputs);
  for (size_t v = 0; v < params_.size(); ++v)
    if (!reachable.count(accumulators_[v].get())) unreachable_.push_back(v);
}

void Reducer::on_grad_ready(size_t var) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;  // no_sync(), or a backward not preceded by a DDP forward
  if (!backward_started_) start_backward(var);
  if (options_.static_graph())
    static_graph_on_grad_ready(var);
  else
    mark_ready(var, /*produced=*/true);
}

void Reducer::start_backward(size_t firing) {
  backward_started_ = true;
  // Runs when the backward this hook belongs to ends. With static_graph an output's gradient
  // hook normally gets here first, so that is the outer backward even when parameters
  // accumulate inside nested ones (reducer_static_graph.cpp).
  autograd_compat::queue_end_of_backward_callback([this] { finalize_backward(); });
  for (size_t v : unreachable_)
    if (v != firing) mark_ready(v, /*produced=*/false);
  // static_graph: the parameters that got no gradient in the first iteration get none now
  // (one that does after all is reported at the end of backward).
  if (options_.static_graph() && learned())
    for (size_t v = 0; v < params_.size(); ++v)
      if (expected_fires_[v] == 0) mark_ready(v, /*produced=*/false);
}

void Reducer::mark_ready(size_t var, bool produced) {
  auto [b, slot] = locator_[var];
  Bucket& bucket = buckets_[b];
  if (ready_[var]) {
    // Marked as unused up front, then autograd produced a gradient after all (the loss used the
    // parameter outside the module's forward): fine while the bucket has not been sent.
    if (produced && !produced_[var] && !bucket.launched) {
      produced_[var] = 1;
      copy_grad_into_bucket(var);
      return;
    }
    throw ConfigError("DistributedDataParallel: parameter '" + names_[var] +
                      "' received a gradient twice in one iteration (backward ran more than once "
                      "per forward, e.g. with retain_graph, or the gradient came after its bucket "
                      "was reduced). DDP reduces exactly one backward per forward.");
  }
  ready_[var] = 1;
  produced_[var] = produced ? 1 : 0;
  // static_graph appends its unused parameters at the end of backward instead (as PyTorch).
  if (record_order_ && (produced || !options_.static_graph())) arrival_order_.push_back(var);
  copy_grad_into_bucket(var);
  if (--bucket.pending == 0 && options_.overlap_communication()) launch_ready_buckets();
}

void Reducer::copy_grad_into_bucket(size_t var) {
  auto [b, slot] = locator_[var];
  at::Tensor& view = buckets_[b].views[slot];
  at::Tensor& grad = params_[var].mutable_grad();
  at::NoGradGuard no_grad;
  // Without a comm hook the bucket is allreduced as a sum, so each rank contributes grad / world
  // (one pass: the divide is fused into this copy). A hook gets the plain local gradients.
  const bool divide = !comm_hook_;
  if (!grad.defined()) {
    view.zero_();  // no gradient on this rank: it contributes zeros
    return;
  }
  if (grad.is_sparse())
    throw ConfigError("DistributedDataParallel: parameter '" + names_[var] +
                      "' has a sparse gradient; only dense gradients are reduced");
  if (options_.gradient_as_bucket_view() && grad.is_alias_of(view)) {
    if (divide) view.mul_(inverse_world_size_);
    return;
  }
  if (divide)
    at::mul_out(view, grad, inverse_world_size_);
  else
    view.copy_(grad);
  if (options_.gradient_as_bucket_view()) grad = view;
}

void Reducer::reset_iteration() {
  armed_ = false;
  backward_started_ = false;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(produced_.begin(), produced_.end(), 0);
  std::fill(fires_.begin(), fires_.end(), 0);
  changed_.clear();
  unreachable_.clear();
  next_to_launch_ = 0;
  launched_in_backward_ = 0;
  for (auto& b : buckets_) {
    b.pending = b.variables.size();
    b.launched = false;
    b.work.reset();
    b.future = CommFuture();
  }
}

std::string Reducer::missing_gradients_message(const std::vector<size_t>& missing) const {
  std::ostringstream names, indices;
  for (size_t i = 0; i < missing.size(); ++i) {
    names << (i ? ", " : "") << names_[missing[i]];
    indices << (i ? " " : "") << missing[i];
  }
  std::ostringstream m;
  m << "DistributedDataParallel: Expected to have finished reduction in the prior iteration before "
       "starting a new one. This error indicates that your module has parameters that were not "
       "used in producing loss. Parameters which did not receive grad for rank "
    << pg_->rank() << ": " << names.str() << " (parameter indices " << indices.str()
    << "). If that is intended, construct DistributedDataParallel with "
       "DistributedDataParallelOptions().find_unused_parameters(true); otherwise make sure every "
       "output of forward takes part in the loss.";
  return m.str();
}

std::vector<std::vector<int64_t>> Reducer::bucket_indices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::vector<int64_t>> out;
  for (const auto& b : buckets_) out.emplace_back(b.variables.begin(), b.variables.end());
  return out;
}

DistributedDataParallelStats Reducer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace ddp::detail

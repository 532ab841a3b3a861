// Reducer: launching bucket reductions (strictly in bucket order, so every rank issues the same
// collectives in the same order) and the end-of-backward finalize.
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <chrono>

#include "ddp/reducer/reducer.h"

namespace ddp::detail {

void Reducer::launch_ready_buckets() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    launch_bucket(next_to_launch_);
    ++next_to_launch_;
    ++launched_in_backward_;
  }
}

void Reducer::launch_bucket(size_t index) {
  Bucket& b = buckets_[index];
  if (comm_hook_) {
    std::vector<at::Tensor> params;
    params.reserve(b.variables.size());
    for (size_t v : b.variables) params.push_back(params_[v]);
    GradBucket view(index, index + 1 == buckets_.size(), b.buffer, b.views, std::move(params));
    b.future = comm_hook_(view);
    if (!b.future.valid())
      throw ConfigError("DistributedDataParallel: the comm hook returned an empty CommFuture for bucket " +
                        std::to_string(index));
  } else {
    std::vector<at::Tensor> tensors = {b.buffer};
    b.work = pg_->allreduce(tensors, AllreduceOptions().op(ReduceOp::kSum));
  }
  b.launched = true;
}

void Reducer::launch_all_at_once() {
  // overlap_communication(false): one allreduce over every bucket after backward (per device and
  // dtype when the model mixes them).
  if (comm_hook_) {
    for (size_t i = next_to_launch_; i < buckets_.size(); ++i) launch_bucket(i);
    next_to_launch_ = buckets_.size();
    return;
  }
  std::vector<at::Tensor> tensors;
  for (size_t i = next_to_launch_; i < buckets_.size(); ++i) tensors.push_back(buckets_[i].buffer);
  if (tensors.empty()) return;
  if (!fusable(tensors)) {
    for (size_t i = next_to_launch_; i < buckets_.size(); ++i) launch_bucket(i);
    next_to_launch_ = buckets_.size();
    return;
  }
  WorkPtr work = pg_->allreduce(tensors, AllreduceOptions().op(ReduceOp::kSum));
  for (size_t i = next_to_launch_; i < buckets_.size(); ++i) {
    buckets_[i].work = work;
    buckets_[i].launched = true;
  }
  next_to_launch_ = buckets_.size();
}

bool Reducer::fusable(const std::vector<at::Tensor>& buffers) {
  for (const auto& t : buffers)
    if (t.scalar_type() != buffers[0].scalar_type() || t.device() != buffers[0].device()) return false;
  return true;
}

at::Tensor Reducer::wait_for_bucket(size_t index) {
  Bucket& b = buckets_[index];
  if (!comm_hook_) {
    b.work->wait();
    return b.buffer;
  }
  at::Tensor result = b.future.wait();
  if (!result.defined() || result.numel() != b.buffer.numel())
    throw ConfigError("DistributedDataParallel: the comm hook's result for bucket " + std::to_string(index) +
                      " has " + (result.defined() ? std::to_string(result.numel()) : "no") +
                      " elements; the bucket has " + std::to_string(b.buffer.numel()));
  if (!result.is_same(b.buffer)) {
    at::NoGradGuard no_grad;
    b.buffer.copy_(result.reshape({-1}));
  }
  return b.buffer;
}

void Reducer::write_back(size_t index, const std::vector<int32_t>& global_used) {
  Bucket& b = buckets_[index];
  at::NoGradGuard no_grad;
  for (size_t s = 0; s < b.variables.size(); ++s) {
    const size_t v = b.variables[s];
    // A parameter no rank used keeps its gradient untouched (as in PyTorch).
    if (!global_used.empty() && global_used[v] == 0) continue;
    at::Tensor& grad = params_[v].mutable_grad();
    const at::Tensor& view = b.views[s];
    if (options_.gradient_as_bucket_view()) {
      if (!grad.defined() || !grad.is_alias_of(view)) grad = view;
    } else if (!grad.defined()) {
      grad = view.clone(at::MemoryFormat::Preserve);
    } else {
      grad.copy_(view);
    }
  }
}

void Reducer::finalize_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!backward_started_) return;
  const auto start = std::chrono::steady_clock::now();
  const int64_t launched_during_backward = launched_in_backward_;

  if (options_.static_graph()) {
    static_graph_finish_marking();
  } else {
    // Parameters that got no gradient. Their buckets are completed with their current gradient
    // (or zeros) either way, so every rank issues the same collectives and no peer hangs; without
    // find_unused_parameters this is an error, raised at the next forward.
    std::vector<size_t> missing;
    for (size_t v = 0; v < params_.size(); ++v)
      if (!ready_[v]) missing.push_back(v);
    if (!missing.empty() && !options_.find_unused_parameters())
      pending_error_ = missing_gradients_message(missing);
    for (size_t v : missing) mark_ready(v, /*produced=*/false);
  }
  if (!options_.overlap_communication()) launch_all_at_once();

  // find_unused_parameters and static_graph: which parameters some rank used (a parameter no
  // rank used keeps its gradient), and with static_graph where the graph changed. Issued after
  // the buckets, in the same order on every rank.
  at::Tensor used;
  WorkPtr used_work;
  if (flags_size() > 0) {
    used = at::empty({flags_size()}, at::TensorOptions().dtype(at::kInt));
    fill_flags(used.data_ptr<int32_t>());
    used = used.to(comm_device());
    std::vector<at::Tensor> t = {used};
    used_work = pg_->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
  }

  std::exception_ptr failure;
  double waited = 0;
  try {
    const auto wait_start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < buckets_.size(); ++i) wait_for_bucket(i);
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
    std::vector<int32_t> global_used;
    if (used_work) {
      used_work->wait();
      at::Tensor cpu = used.cpu();
      global_used.assign(cpu.data_ptr<int32_t>(), cpu.data_ptr<int32_t>() + cpu.numel());
    }
    for (size_t i = 0; i < buckets_.size(); ++i) write_back(i, global_used);
    // Every rank raises it, after all the collectives, so no rank is left waiting.
    if (options_.static_graph()) {
      const std::string error = static_graph_error(global_used);
      if (!error.empty()) throw ConfigError(error);
    }
  } catch (...) {
    failure = std::current_exception();
  }

  end_round();
  const double finalize = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.synced_iterations += 1;
  stats_.buckets_launched_during_backward = launched_during_backward;
  stats_.last_wait_seconds = waited;
  stats_.total_wait_seconds += waited;
  stats_.last_finalize_seconds = finalize;
  stats_.total_finalize_seconds += finalize;
  reset_iteration();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace ddp::detail

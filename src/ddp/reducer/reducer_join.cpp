// Reducer: what DistributedDataParallel::join() needs from it (join.cpp has the protocol).
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include "ddp/reducer/reducer.h"

namespace ddp::detail {

void Reducer::set_gradient_divisor(int divisor) {
  std::lock_guard<std::mutex> lock(mutex_);
  inverse_world_size_ = at::scalar_tensor(1.0 / divisor, at::TensorOptions().dtype(at::kDouble));
  inverse_world_size_.unsafeGetTensorImpl()->set_wrapped_number(true);
}

void Reducer::shadow_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  at::NoGradGuard no_grad;
  // Zero buckets shaped like ours (PyTorch's _get_zeros_like_grad_buckets): this rank adds
  // nothing, and its own gradients stay as they are.
  std::vector<at::Tensor> zeros;
  for (const auto& b : buckets_) zeros.push_back(at::zeros_like(b.buffer));
  std::vector<WorkPtr> works;
  std::vector<CommFuture> futures;
  if (!comm_hook_ && !options_.overlap_communication() && !zeros.empty() && fusable(zeros)) {
    // As launch_all_at_once(): every bucket in one allreduce.
    works.push_back(pg_->allreduce(zeros, AllreduceOptions().op(ReduceOp::kSum)));
  } else {
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const Bucket& b = buckets_[i];
      if (!comm_hook_) {
        std::vector<at::Tensor> one = {zeros[i]};
        works.push_back(pg_->allreduce(one, AllreduceOptions().op(ReduceOp::kSum)));
        continue;
      }
      std::vector<at::Tensor> views, params;
      for (const auto& v : b.views)
        views.push_back(zeros[i].as_strided(v.sizes(), v.strides(),
                                            zeros[i].storage_offset() + v.storage_offset() - b.buffer.storage_offset()));
      for (size_t v : b.variables) params.push_back(params_[v]);
      GradBucket view(i, i + 1 == buckets_.size(), zeros[i], views, std::move(params));
      futures.push_back(comm_hook_(view));
    }
  }
  if (flags_size() > 0) {
    // Zeros: a joined rank uses no parameter and changes no graph.
    std::vector<at::Tensor> used = {at::zeros({flags_size()}, at::TensorOptions().dtype(at::kInt).device(comm_device()))};
    works.push_back(pg_->allreduce(used, AllreduceOptions().op(ReduceOp::kSum)));
  }
  for (auto& f : futures) f.wait();
  for (auto& w : works) w->wait();
  // Counts as a round, as the others' synchronized backward does: every rank then rebuilds its
  // buckets at the same forward. (It learns nothing for static_graph: the first backward this
  // rank runs itself does, with the same collectives as the others' later ones.)
  end_round();
}

}  // namespace ddp::detail

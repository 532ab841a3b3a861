// Reducer: rebuilding the buckets once in the order gradients actually arrived.
//
// The initial buckets follow reverse registration order, a guess. After the first synchronized
// iteration rank 0 knows the real arrival order; it assigns buckets over that order and
// broadcasts the assignment, so every rank uses the same buckets whatever its own order was.
#include <ddp/logging.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <ddp/errors.h>

#include "ddp/reducer/bucket_assignment.h"
#include "ddp/reducer/reducer.h"

namespace ddp::detail {

bool Reducer::rebuild_buckets_if_due() {
  std::lock_guard<std::mutex> lock(mutex_);
  // The arrival order is only complete when no parameter may go missing (as in PyTorch); with
  // static_graph the missing ones are known and appended.
  if (rebuilt_ || !order_recorded_ || !options_.rebuild_buckets() ||
      (options_.find_unused_parameters() && !options_.static_graph()) || params_.empty())
    return false;
  rebuilt_ = true;
  auto assignment = agree_on_rebuilt_assignment();
  std::vector<std::vector<size_t>> current;
  for (const auto& b : buckets_) current.push_back(b.variables);
  stats_.buckets_rebuilt = true;
  if (assignment == current) return false;
  build_buckets(assignment);
  reset_iteration();
  DDP_LOG(DEBUG) << "DistributedDataParallel: rebuilt " << buckets_.size()
                 << " buckets in gradient arrival order";
  return true;
}

void Reducer::end_round() {
  ++rounds_;
  if (record_order_) {
    record_order_ = false;
    order_recorded_ = true;
  } else if (options_.static_graph() && rounds_ == 1) {
    // Round 0 learned the graph (its reduction waited for the end of backward); round 1 is the
    // first whose gradients become ready during backward, in the order to rebuild in. PyTorch
    // also rebuilds at the forward after its second iteration.
    record_order_ = true;
  }
}

std::vector<std::vector<size_t>> Reducer::agree_on_rebuilt_assignment() {
  const size_t n = params_.size();
  // Message: [number of buckets, parameter order (n), bucket of each position (n)].
  at::Tensor message = at::zeros({static_cast<int64_t>(2 * n + 1)}, at::TensorOptions().dtype(at::kLong));
  if (pg_->rank() == 0) {
    // Arrival order, then anything that did not arrive (reverse registration order).
    std::vector<char> seen(n, 0);
    std::vector<size_t> order;
    for (size_t v : arrival_order_)
      if (!seen[v]) {
        seen[v] = 1;
        order.push_back(v);
      }
    for (size_t i = n; i-- > 0;)
      if (!seen[i]) order.push_back(i);

    std::vector<int> group;
    std::vector<int64_t> bytes;
    bucket_groups(params_, group, bytes);
    auto assignment = assign_buckets(order, group, bytes, caps_);
    int64_t* m = message.data_ptr<int64_t>();
    m[0] = static_cast<int64_t>(assignment.size());
    size_t pos = 0;
    for (size_t b = 0; b < assignment.size(); ++b)
      for (size_t v : assignment[b]) {
        m[1 + pos] = static_cast<int64_t>(v);
        m[1 + n + pos] = static_cast<int64_t>(b);
        ++pos;
      }
  }
  at::Tensor on_device = message.to(comm_device());
  std::vector<at::Tensor> t = {on_device};
  pg_->broadcast(t, 0)->wait();
  message = on_device.cpu();

  const int64_t* m = message.data_ptr<int64_t>();
  std::vector<std::vector<size_t>> assignment(static_cast<size_t>(m[0]));
  for (size_t pos = 0; pos < n; ++pos)
    assignment[static_cast<size_t>(m[1 + n + pos])].push_back(static_cast<size_t>(m[1 + pos]));
  arrival_order_.clear();
  return assignment;
}

void Reducer::set_bucket_indices(const std::vector<std::vector<int64_t>>& buckets) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.synced_iterations > 0 || backward_started_)
    throw ConfigError("DistributedDataParallel::set_bucket_indices: call it before the first backward");
  const size_t n = params_.size();
  std::vector<int> group;
  std::vector<int64_t> bytes;
  bucket_groups(params_, group, bytes);
  std::vector<char> seen(n, 0);
  std::vector<std::vector<size_t>> assignment;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::string which = "DistributedDataParallel::set_bucket_indices: bucket " + std::to_string(b);
    if (buckets[b].empty()) throw ConfigError(which + " is empty");
    assignment.emplace_back();
    for (int64_t v : buckets[b]) {
      if (v < 0 || static_cast<size_t>(v) >= n)
        throw ConfigError(which + " names parameter " + std::to_string(v) + "; the model has " + std::to_string(n));
      if (seen[static_cast<size_t>(v)]++)
        throw ConfigError(which + " names parameter " + std::to_string(v) + ", which another bucket already holds");
      if (group[static_cast<size_t>(v)] != group[static_cast<size_t>(buckets[b][0])])
        throw ConfigError(which + " mixes devices or dtypes (parameters " + std::to_string(buckets[b][0]) + " and " +
                          std::to_string(v) + ")");
      assignment.back().push_back(static_cast<size_t>(v));
    }
  }
  for (size_t v = 0; v < n; ++v)
    if (!seen[v]) throw ConfigError("DistributedDataParallel::set_bucket_indices: no bucket holds parameter " + std::to_string(v));
  build_buckets(assignment);
  rebuilt_ = true;
  stats_.buckets_rebuilt = true;
}

}  // namespace ddp::detail

#pragma once
// The reducer: turns gradients arriving during backward into averaged gradients when backward
// returns. Split by job:
//   reducer.cpp         construction, grad-ready hooks and their bookkeeping (which parameter is
//                       ready, copying gradients into buckets), the unused-parameter search
//   reducer_launch.cpp  launching bucket reductions in order, the end-of-backward finalize that
//                       waits for them and writes gradients back
//   reducer_rebuild.cpp the one-time rebuild of buckets in gradient arrival order (rank 0 decides)
//   reducer_join.cpp    join's side: the divisor, and a joined rank's zero reductions
//   reducer_static_graph.cpp  static_graph: learning the graph in the first iteration, readiness
//                       after a parameter's last accumulation, and the error when the graph changes
//   bucket*.cpp, autograd_compat.cpp, comm_hooks.cpp  the pieces these use

#include <ddp/comm_hooks.h>
#include <ddp/distributed_data_parallel.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ddp/reducer/autograd_compat.h"  // torch::autograd::Node, declared there for the reducer's files
#include "ddp/reducer/bucket.h"
#include "ddp/reducer/bucket_assignment.h"

namespace ddp::detail {

class Reducer {
 public:
  /// `params`: the parameters to reduce (requires_grad, no duplicates), in registration order.
  Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
          std::shared_ptr<ProcessGroup> pg, const DistributedDataParallelOptions& options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  void register_comm_hook(CommHook hook);

  /// Start of a forward: throws what the previous iteration left behind (parameters that got no
  /// gradient, a backward that never finished) and forgets a forward that had no backward.
  void check_prior_iteration();
  /// Rebuilds the buckets in gradient arrival order once, after the first synchronized
  /// iteration (collective; every rank calls it at the same forward). True when it rebuilt.
  bool rebuild_buckets_if_due();
  /// End of a synchronized forward: the next backward's gradients are to be reduced. With
  /// find_unused_parameters, `outputs` tell which parameters the graph reaches (when
  /// `outputs_complete`; otherwise unused parameters are found at the end of backward). With
  /// static_graph they get a gradient hook that starts the backward (reducer_static_graph.cpp).
  void prepare_for_backward(const std::vector<at::Tensor>& outputs, bool outputs_complete);

  /// Join: each rank's gradient is scaled by 1 / divisor before the sum (the world size unless
  /// join's divide_by_initial_world_size is off). From the next backward on.
  void set_gradient_divisor(int divisor);
  /// Join: what a rank out of inputs does in place of a synchronized backward: every bucket's
  /// reduction with zeros, through the comm hook when there is one, launched as backward would
  /// launch them, then the unused-parameter allreduce (zeros), and waits for all.
  void shadow_backward();

  std::vector<std::vector<int64_t>> bucket_indices() const;
  /// Replaces the buckets before the first backward and keeps them (no rebuild).
  void set_bucket_indices(const std::vector<std::vector<int64_t>>& buckets);
  DistributedDataParallelStats stats() const;

 private:
  // reducer.cpp: hook bookkeeping
  void on_grad_ready(size_t var);
  /// The first hook of a synchronized backward: queues the finalize callback on the current
  /// backward and marks the parameters known to get no gradient (all but `firing`).
  void start_backward(size_t firing);
  void mark_ready(size_t var, bool produced);
  void copy_grad_into_bucket(size_t var);
  void build_buckets(const std::vector<std::vector<size_t>>& assignment);
  void reset_iteration();
  std::string missing_gradients_message(const std::vector<size_t>& missing) const;

  // reducer_launch.cpp: launch and finalize
  void launch_ready_buckets();
  void launch_bucket(size_t index);
  void launch_all_at_once();
  void finalize_backward();
  at::Tensor wait_for_bucket(size_t index);
  void write_back(size_t index, const std::vector<int32_t>& global_used);

  // reducer_rebuild.cpp
  std::vector<std::vector<size_t>> agree_on_rebuilt_assignment();
  /// After each synchronized or shadowed backward: which round records the arrival order.
  void end_round();

  // reducer_static_graph.cpp
  bool learned() const { return !expected_fires_.empty(); }
  void static_graph_on_grad_ready(size_t var);
  void static_graph_hook_outputs(const std::vector<at::Tensor>& outputs);
  /// End of backward, before the launch of what is left: learns (first iteration) or checks the
  /// counts, and marks every parameter not ready yet.
  void static_graph_finish_marking();
  /// Per-parameter flags for the end-of-backward allreduce: find_unused_parameters sends whether
  /// this rank used each parameter; static_graph sends that (as learned) and, after it, whether
  /// the parameter broke the learned graph here. Same size on every rank (shadow_backward too).
  int64_t flags_size() const;
  void fill_flags(int32_t* flags) const;
  /// static_graph: the error every rank raises when some rank's graph changed (empty if none).
  std::string static_graph_error(const std::vector<int32_t>& summed_flags) const;

  std::vector<std::vector<size_t>> initial_assignment() const;
  /// overlap_communication(false) without a hook reduces every bucket in one allreduce, which
  /// needs one device and dtype across them (reducer_launch.cpp).
  static bool fusable(const std::vector<at::Tensor>& buffers);
  at::Device comm_device() const { return params_.front().device(); }

  std::vector<at::Tensor> params_;
  std::vector<std::string> names_;
  std::shared_ptr<ProcessGroup> pg_;
  DistributedDataParallelOptions options_;
  BucketCaps caps_;
  at::Tensor inverse_world_size_;  ///< wrapped scalar 1/world, for the fused divide
  CommHook comm_hook_;

  // Hooks: accumulators kept alive (the parameters only hold them weakly) and the hook keys.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  std::unordered_map<const torch::autograd::Node*, size_t> accumulator_index_;

  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> locator_;  ///< parameter -> (bucket, slot)

  mutable std::mutex mutex_;
  // Per iteration (guarded by mutex_).
  bool armed_ = false;             ///< a synchronized forward ran; its backward is expected
  bool backward_started_ = false;  ///< a hook fired; the finalize callback is queued
  std::vector<char> ready_;        ///< gradient in its bucket this iteration
  std::vector<char> produced_;     ///< got a gradient from autograd (not marked as unused)
  std::vector<size_t> unreachable_;  ///< find_unused: not reachable from the forward's outputs
  size_t next_to_launch_ = 0;
  int64_t launched_in_backward_ = 0;
  std::string pending_error_;      ///< thrown at the next forward

  // static_graph (reducer_static_graph.cpp). expected_fires_ is empty until the graph is learned.
  std::vector<int> expected_fires_;  ///< accumulations per parameter per backward, as learned
  std::vector<int> fires_;           ///< accumulations in this backward
  std::vector<size_t> changed_;      ///< this backward: parameters whose count differs from the learned one
  std::shared_ptr<char> alive_ = std::make_shared<char>();  ///< output hooks check we still exist

  // Bucket rebuild.
  int64_t rounds_ = 0;        ///< synchronized backwards plus join's shadowed ones
  bool record_order_ = true;  ///< false from the start with static_graph (see end_round)
  std::vector<size_t> arrival_order_;
  bool order_recorded_ = false;
  bool rebuilt_ = false;

  DistributedDataParallelStats stats_;
};

}  // namespace ddp::detail

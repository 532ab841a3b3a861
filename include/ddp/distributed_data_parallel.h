#pragma once
// DistributedDataParallel: wrap a module so that loss.backward() leaves every parameter's gradient
// averaged over all ranks, with communication overlapped with the rest of backward.
//
//   auto pg = ddp::init_process_group();
//   Net net;
//   ddp::DistributedDataParallel model(net, pg);            // checks the model, broadcasts rank 0's
//   torch::optim::SGD opt(model.module()->parameters(), 0.01);
//   auto loss = torch::nn::functional::cross_entropy(model(x), y);   // model(...) = net->forward(...)
//   loss.backward();                                      // grads are the global average here
//   opt.step();
//   { auto guard = model.no_sync(); model(x2).sum().backward(); }    // local accumulation only
//
// How (the same design as PyTorch's reducer): parameters are grouped into buckets per (device,
// dtype) in reverse registration order (about the order backward produces their gradients), the
// first bucket up to first_bucket_cap_mb, later ones up to bucket_cap_mb. A hook on each
// parameter's gradient accumulator copies the gradient into its bucket; when a bucket is full its
// allreduce is launched asynchronously, buckets strictly in order. At the end of backward DDP waits
// for the buckets and writes the averaged gradients back. After the first iteration the buckets are
// rebuilt once in the order gradients actually arrived (rank 0 decides for everyone).
//
// Every forward with gradients enabled outside no_sync() expects exactly one backward before the
// next forward. A parameter that got no gradient is an error at the next forward (naming it),
// unless find_unused_parameters or static_graph is on. With broadcast_buffers (the default) every forward starts
// with rank 0's buffers, so every rank must call forward the same number of times; evaluate on
// one rank through model.module() instead.

#include <ddp/export.h>
#include <ddp/comm_hooks.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch {
namespace nn {
class Module;
}  // namespace nn
}  // namespace torch

namespace ddp {

struct DistributedDataParallelOptions {
  /// Most bytes per bucket after the first (MiB; PyTorch's bucket_cap_mb).
  TORCH_ARG(double, bucket_cap_mb) = 25.0;
  /// Most bytes in the first bucket to be reduced, so communication starts early (MiB).
  TORCH_ARG(double, first_bucket_cap_mb) = 1.0;
  /// Parameters that get no gradient in an iteration count as ready (zero contribution), so
  /// buckets still complete. Costs a graph traversal per forward and one small allreduce per step.
  TORCH_ARG(bool, find_unused_parameters) = false;
  /// Every forward starts with rank 0's buffers (e.g. BatchNorm running statistics).
  TORCH_ARG(bool, broadcast_buffers) = true;
  /// Gradients alias bucket memory: no copy in or out, less memory.
  TORCH_ARG(bool, gradient_as_bucket_view) = false;
  /// false: no reduction during backward; all buckets are reduced in one allreduce after it
  /// (for measurements and debugging).
  TORCH_ARG(bool, overlap_communication) = true;
  /// Rebuild the buckets once, after the first iteration, in gradient arrival order.
  TORCH_ARG(bool, rebuild_buckets) = true;
  /// The autograd graph is the same every iteration (PyTorch's static_graph=True): the first
  /// synchronized backward is watched, and its reduction delayed to its end, to learn which
  /// parameters get no gradient and how many times each parameter's gradient is accumulated
  /// (twice when, e.g., activation checkpointing recomputes a shared layer in a nested backward).
  /// From then on a parameter is reduced after its last accumulation, unused ones are known
  /// without a graph search (find_unused_parameters is then not needed, and ignored), and a
  /// graph that changes is a ConfigError on every rank naming the parameter.
  TORCH_ARG(bool, static_graph) = false;
};

/// How DistributedDataParallel::join() handles ranks that run out of inputs (PyTorch's
/// DistributedDataParallel.join() arguments).
struct JoinOptions {
  /// true: every rank's gradient is divided by the world size, so a rank that has joined counts as
  /// a zero gradient. false: by the number of ranks still training in that step.
  TORCH_ARG(bool, divide_by_initial_world_size) = true;
  /// true: as soon as one rank runs out of inputs, every rank's next forward throws DataError
  /// (the joined rank's join() too), so they can stop the epoch together.
  TORCH_ARG(bool, throw_on_early_termination) = false;
};

/// Counters for the benchmark and for logs.
struct DistributedDataParallelStats {
  int64_t synced_iterations = 0;      ///< backward passes that were reduced
  int64_t buckets = 0;                ///< current number of buckets
  int64_t bucket_bytes = 0;           ///< bytes over all buckets
  bool buckets_rebuilt = false;
  /// Last synced iteration: buckets launched while backward was still running.
  int64_t buckets_launched_during_backward = 0;
  /// Seconds the end-of-backward callback spent waiting for communication (last / total): the
  /// communication backward did not hide.
  double last_wait_seconds = 0;
  double total_wait_seconds = 0;
  /// Seconds in the whole end-of-backward callback (waiting, plus writing gradients back).
  double last_finalize_seconds = 0;
  double total_finalize_seconds = 0;
};

namespace detail {
class Reducer;
struct DdpState;

// The tensors in a forward's output, for the unused-parameter search. Unknown types set
// `complete` to false (DDP then finds unused parameters at the end of backward instead).
inline void collect_tensors(const at::Tensor& t, std::vector<at::Tensor>& out, bool& complete);
template <typename T>
void collect_tensors(const std::vector<T>& v, std::vector<at::Tensor>& out, bool& complete);
template <typename A, typename B>
void collect_tensors(const std::pair<A, B>& p, std::vector<at::Tensor>& out, bool& complete);
template <typename... T>
void collect_tensors(const std::tuple<T...>& t, std::vector<at::Tensor>& out, bool& complete);
template <typename T>
void collect_tensors(const T&, std::vector<at::Tensor>&, bool& complete) {
  complete = false;
}
inline void collect_tensors(const at::Tensor& t, std::vector<at::Tensor>& out, bool&) {
  if (t.defined()) out.push_back(t);
}
template <typename T>
void collect_tensors(const std::vector<T>& v, std::vector<at::Tensor>& out, bool& complete) {
  for (const auto& x : v) collect_tensors(x, out, complete);
}
template <typename A, typename B>
void collect_tensors(const std::pair<A, B>& p, std::vector<at::Tensor>& out, bool& complete) {
  collect_tensors(p.first, out, complete);
  collect_tensors(p.second, out, complete);
}
template <typename... T>
void collect_tensors(const std::tuple<T...>& t, std::vector<at::Tensor>& out, bool& complete) {
  std::apply([&](const auto&... x) { (collect_tensors(x, out, complete), ...); }, t);
}

// shared_ptr<Module> from a module holder (Net) or a shared_ptr<NetImpl>.
template <typename H>
auto module_pointer(const H& holder) -> decltype(std::shared_ptr<torch::nn::Module>(holder.ptr())) {
  return holder.ptr();
}
template <typename T>
std::shared_ptr<torch::nn::Module> module_pointer(const std::shared_ptr<T>& module) {
  return module;
}
}  // namespace detail

/// While alive, forwards run without gradient synchronization: gradients accumulate locally and
/// the next synchronized backward reduces the accumulated sum. Get one from model.no_sync().
class DDP_API NoSyncGuard {
 public:
  explicit NoSyncGuard(detail::DdpState* state);
  ~NoSyncGuard();
  NoSyncGuard(NoSyncGuard&& other) noexcept;
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(NoSyncGuard&&) = delete;

 private:
  detail::DdpState* state_;
  bool previous_;
};

/// The non-template part of DistributedDataParallel (all the logic lives in libddp).
class DDP_API DistributedDataParallelBase {
 public:
  DistributedDataParallelBase(std::shared_ptr<torch::nn::Module> module,
                              std::shared_ptr<ProcessGroup> pg,
                              DistributedDataParallelOptions options);
  ~DistributedDataParallelBase();
  DistributedDataParallelBase(DistributedDataParallelBase&&) noexcept;
  DistributedDataParallelBase& operator=(DistributedDataParallelBase&&) noexcept;

  /// Gradient accumulation without communication while the guard lives.
  NoSyncGuard no_sync();
  /// Training on uneven inputs (PyTorch's `with model.join():`). Runs `loop`, this rank's pass over
  /// its own batches, which may hold fewer steps than other ranks'. Each forward inside it first
  /// tells the group that this rank still trains. When `loop` returns, this rank shadows the
  /// collectives of the ranks still training (their buffer broadcasts and gradient reductions,
  /// with zero gradients) until every rank's loop has returned; then every rank takes the
  /// parameters and buffers of the last rank to finish (the highest-numbered of them). While
  /// joining, buffers are broadcast from the highest-numbered rank still training, not rank 0.
  /// Collective: every rank calls join() around its loop. An exception from `loop` propagates at
  /// once, without shadowing (the other ranks then fail at their timeout), as in PyTorch.
  void join(const std::function<void()>& loop, JoinOptions options = {});
  /// Replaces how buckets are reduced; call before the first backward, on every rank.
  void register_comm_hook(CommHook hook);

  ProcessGroup& process_group() const;
  const DistributedDataParallelOptions& options() const;
  /// Names of the reduced parameters, in registration order; bucket_indices() refers to these.
  const std::vector<std::string>& parameter_names() const;
  /// Parameter indices per bucket, in launch order.
  std::vector<std::vector<int64_t>> bucket_indices() const;
  /// Uses these buckets (parameter indices per bucket, in launch order, as bucket_indices()
  /// returns them) from the first backward on, instead of the initial ones and their rebuild: a
  /// resumed run continues on the buckets the saved run had rebuilt to, so per-bucket comm hook
  /// state (PowerSGD) meets the same buckets. Before the first backward, the same on every rank.
  /// ConfigError when it is not a partition of the parameters or a bucket mixes devices or dtypes.
  void set_bucket_indices(const std::vector<std::vector<int64_t>>& buckets);
  DistributedDataParallelStats stats() const;

 protected:
  /// Before the module's forward: pending errors, bucket rebuild, buffer broadcast. Returns true
  /// when this forward's backward is to be synchronized.
  bool pre_forward();
  /// After it: where the output's autograd graph reaches (find_unused_parameters).
  void post_forward(const std::vector<at::Tensor>& outputs, bool outputs_complete);

 private:
  std::unique_ptr<detail::DdpState> state_;
};

template <typename ModuleType>
class DistributedDataParallel : public DistributedDataParallelBase {
 public:
  /// Checks that every rank has the same parameters (ConfigError naming the first difference and
  /// the ranks), broadcasts rank 0's parameters and buffers, and builds the buckets. Collective:
  /// every rank of `pg` must construct its DistributedDataParallel at the same point.
  DistributedDataParallel(ModuleType module, std::shared_ptr<ProcessGroup> pg,
                          DistributedDataParallelOptions options = {})
      : DistributedDataParallelBase(detail::module_pointer(module), std::move(pg), std::move(options)),
        module_(std::move(module)) {}

  /// Runs module->forward(args...).
  template <typename... Args>
  auto operator()(Args&&... args) {
    const bool sync = pre_forward();
    auto output = module_->forward(std::forward<Args>(args)...);
    if (sync) {
      std::vector<at::Tensor> tensors;
      bool complete = true;
      detail::collect_tensors(output, tensors, complete);
      post_forward(tensors, complete);
    }
    return output;
  }

  /// The wrapped module (save it with torch::save for plain keys, no "module." prefix).
  ModuleType& module() { return module_; }
  const ModuleType& module() const { return module_; }

 private:
  ModuleType module_;
};

}  // namespace ddp

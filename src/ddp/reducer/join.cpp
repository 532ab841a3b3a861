// DistributedDataParallel::join(): training on uneven inputs, PyTorch's Join protocol
// (torch/distributed/algorithms/join.py and DistributedDataParallel's _DDPJoinHook, the same in
// torch 1.13 and 2.6), collective for collective:
//
//   a rank still training, each forward       a rank that has joined, each round
//   allreduce(1)      "I still train"          allreduce(0): the count; 0 ends the rounds
//   [throw_on_early_termination: allreduce(0)  allreduce(1) and throw]
//   the bucket rebuild, once                   the same
//   allreduce(max rank) + buffer broadcast     allreduce(max of -1) + the same broadcast
//   allreduce(1 if this backward syncs)        allreduce(0): does it? if not, the round ends
//   backward: the bucket reductions            the same reductions with zero buckets
//
// When the count reaches 0, every rank agrees on the highest rank among the last to join and
// takes its parameters and buffers.
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <torch/nn/module.h>

#include "ddp/reducer/ddp_state.h"
#include "ddp/reducer/model_sync.h"

namespace ddp {
namespace detail {
namespace {

at::TensorOptions flag_options(const ProcessGroup& pg) {
  return at::TensorOptions().device(pg.device()).dtype(at::kFloat);
}

// A one-element allreduce (sum), waited for; its result.
double allreduce_value(ProcessGroup& pg, double value) {
  std::vector<at::Tensor> t = {at::full({1}, value, flag_options(pg))};
  pg.allreduce(t, AllreduceOptions().op(ReduceOp::kSum))->wait();
  return t[0].item<double>();
}

// Waits for the allreduces a forward left running, so that their tensors outlive them.
void finish_pending(JoinRun& run) {
  if (run.notify_work) run.notify_work->wait();
  if (run.requires_sync_work) run.requires_sync_work->wait();
  run.notify_work = run.requires_sync_work = nullptr;
}

[[noreturn]] void throw_exhausted(const ProcessGroup& pg, bool this_rank) {
  throw DataError("DistributedDataParallel::join: " +
                  (this_rank ? "rank " + std::to_string(pg.rank()) + " ran out of inputs"
                             : std::string("a rank ran out of inputs")) +
                  ", and throw_on_early_termination stops every rank at this step");
}

// The rounds of a rank that has joined, until no rank trains; then the final agreement.
void shadow_until_everyone_joined(DdpState& s) {
  ProcessGroup& pg = *s.pg;
  bool last_joiner = true;
  for (int64_t round = 0;; ++round) {
    if (allreduce_value(pg, 0) == 0) break;
    if (s.join.options.throw_on_early_termination()) {
      allreduce_value(pg, 1);
      throw_exhausted(pg, true);
    }
    if (round == 1000) {
      DDP_LOG(WARN) << "DistributedDataParallel::join: rank " << pg.rank()
                    << " has shadowed 1000 steps of ranks with more inputs: the inputs are very uneven";
    }
    s.reducer->rebuild_buckets_if_due();
    if (s.options.broadcast_buffers() && pg.size() > 1) {
      auto buffers = s.module->buffers(/*recurse=*/true);
      if (!buffers.empty()) broadcast_coalesced(pg, buffers, highest_rank_where(pg, false));
    }
    last_joiner = false;
    if (allreduce_value(pg, 0) == 0) continue;  // the others run this step under no_sync()
    s.reducer->shadow_backward();
  }
  // The model of the last rank(s) to finish: every parameter and buffer (PyTorch's
  // _sync_final_model broadcasts the module's whole state from it).
  std::vector<at::Tensor> states;
  for (const auto& p : s.module->parameters(/*recurse=*/true)) states.push_back(p);
  for (const auto& b : s.module->buffers(/*recurse=*/true)) states.push_back(b);
  at::NoGradGuard no_grad;
  broadcast_coalesced(pg, states, highest_rank_where(pg, last_joiner));
}

}  // namespace

int highest_rank_where(ProcessGroup& pg, bool candidate) {
  std::vector<at::Tensor> t = {at::full({1}, candidate ? pg.rank() : -1, flag_options(pg))};
  pg.allreduce(t, AllreduceOptions().op(ReduceOp::kMax))->wait();
  const int rank = static_cast<int>(t[0].item<double>());
  if (rank < 0) throw ConfigError("DistributedDataParallel::join: no rank qualified as the source (a bug)");
  return rank;
}

void join_pre_forward(DdpState& s) {
  ProcessGroup& pg = *s.pg;
  finish_pending(s.join);
  s.join.notify = at::ones({1}, flag_options(pg));
  std::vector<at::Tensor> t = {s.join.notify};
  s.join.notify_work = pg.allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
  if (s.join.options.throw_on_early_termination() && allreduce_value(pg, 0) > 0) {
    finish_pending(s.join);
    throw_exhausted(pg, false);
  }
  int divisor = pg.size();
  if (!s.join.options.divide_by_initial_world_size()) {
    s.join.notify_work->wait();
    divisor = static_cast<int>(s.join.notify.item<double>());
  }
  s.reducer->set_gradient_divisor(divisor);
}

void join_announce_sync(DdpState& s, bool sync) {
  s.join.requires_sync = at::full({1}, sync ? 1 : 0, flag_options(*s.pg));
  std::vector<at::Tensor> t = {s.join.requires_sync};
  s.join.requires_sync_work = s.pg->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
}

}  // namespace detail

void DistributedDataParallelBase::join(const std::function<void()>& loop, JoinOptions options) {
  detail::DdpState& s = *state_;
  if (s.join.active) throw ConfigError("DistributedDataParallel::join: already inside join()");
  if (!loop) throw ConfigError("DistributedDataParallel::join: the loop is empty");
  s.join = detail::JoinRun();
  s.join.active = true;
  s.join.options = options;
  // Leaving by an exception too: forwards outside join() are plain again.
  struct Leave {
    detail::DdpState& s;
    ~Leave() {
      s.join.active = false;
      s.reducer->set_gradient_divisor(s.pg->size());
    }
  } leave{s};
  loop();
  detail::finish_pending(s.join);
  s.join.active = false;
  detail::shadow_until_everyone_joined(s);
}

}  // namespace ddp

#include "trainer/comm_hook_choice.h"

#include <ddp/comm_hooks.h>
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/Functions.h>

namespace ddp::trainer {

at::Tensor bucket_layout_tensor(const std::vector<std::vector<int64_t>>& buckets) {
  std::vector<int64_t> flat = {static_cast<int64_t>(buckets.size())};
  for (const auto& b : buckets) flat.push_back(static_cast<int64_t>(b.size()));
  for (const auto& b : buckets) flat.insert(flat.end(), b.begin(), b.end());
  return at::tensor(flat);
}

std::vector<std::vector<int64_t>> bucket_layout_from(const at::Tensor& t) {
  const auto bad = [] { return DataError("PowerSGD checkpoint state: 'ddp.buckets' is not a bucket layout"); };
  if (t.scalar_type() != at::kLong || t.dim() != 1 || t.numel() < 1) throw bad();
  const at::Tensor c = t.contiguous();
  const int64_t* v = c.data_ptr<int64_t>();
  const int64_t n = c.numel(), count = v[0];
  if (count < 0 || count > n - 1) throw bad();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(count));
  int64_t at = 1 + count;
  for (int64_t b = 0; b < count; ++b) {
    const int64_t size = v[1 + b];
    if (size < 0 || size > n - at) throw bad();
    out[static_cast<size_t>(b)].assign(v + at, v + at + size);
    at += size;
  }
  if (at != n) throw bad();
  return out;
}

CommHookChoice::CommHookChoice(CommHookSetting setting, std::shared_ptr<ProcessGroup> pg, Checkpointer& checkpointer)
    : setting_(std::move(setting)), pg_(std::move(pg)) {
  if (setting_.kind != "none" && pg_->rank() == 0) DDP_LOG(INFO) << "DDP comm hook: " << setting_.describe();
  if (setting_.kind != "powersgd") return;
  powersgd_ = std::make_shared<comm_hooks::PowerSGDState>(
      pg_, comm_hooks::PowerSGDOptions()
               .matrix_approximation_rank(setting_.powersgd_rank)
               .start_iter(setting_.powersgd_start_iter));
  checkpointer.track_rank_state(
      "powersgd",
      [this] {
        Checkpointer::RankState tensors = powersgd_->state_tensors();
        if (model_) tensors.emplace_back("ddp.buckets", bucket_layout_tensor(model_->bucket_indices()));
        return tensors;
      },
      [this](const Checkpointer::RankState& tensors, bool same_world) {
        // Another world size: every rank continues from rank 0's step count, generator, P and Q,
        // without error feedback (each rank's error belongs to the old split of the batch).
        if (!same_world) DDP_LOG(WARN) << "PowerSGD: the world size changed; the error feedback starts from zero";
        powersgd_->load_state_tensors(tensors, same_world);
        for (const auto& [name, t] : tensors)
          if (name == "ddp.buckets") resumed_buckets_ = bucket_layout_from(t);
        if (model_ && !resumed_buckets_.empty()) model_->set_bucket_indices(resumed_buckets_);
      });
}

void CommHookChoice::install(DistributedDataParallelBase& model) {
  if (setting_.kind == "fp16") model.register_comm_hook(comm_hooks::fp16_compress(pg_));
  if (setting_.kind == "bf16") model.register_comm_hook(comm_hooks::bf16_compress(pg_));
  if (setting_.kind == "powersgd") {
    model.register_comm_hook(comm_hooks::powersgd(powersgd_));
    model_ = &model;
    if (!resumed_buckets_.empty()) model.set_bucket_indices(resumed_buckets_);
  }
}

}  // namespace ddp::trainer

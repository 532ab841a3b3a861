#include "evaluate.h"

#include "amp.h"
#include "util/collectives.h"
#include "data/ranzcr/records.h"

#include <ddp/process_group.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace train_ranzcr {

std::vector<int64_t> strided_share(const std::vector<int64_t>& indices, int rank, int world) {
  std::vector<int64_t> share;
  for (size_t i = static_cast<size_t>(rank); i < indices.size(); i += static_cast<size_t>(world)) {
    share.push_back(indices[i]);
  }
  return share;
}

Predictions predict_all(ddp::models::ResNet& net, ddp::data::ranzcr::BatchLoader& loader,
                        const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                        bool amp) {
  using ddp::data::ranzcr::kNumLabels;
  const bool was_training = net->is_training();
  net->eval();
  torch::NoGradGuard no_grad;
  // One float row per sample: 11 logits, 11 targets, valid flag; the record index travels as int64.
  std::vector<at::Tensor> rows, ids;
  loader.start_epoch(strided_share(indices, pg.rank(), pg.size()), 0);
  ddp::data::ranzcr::Batch batch;
  while (loader.next(&batch)) {
    const bool pinned = batch.images.is_pinned();
    at::Tensor x = batch.images.to(device, /*non_blocking=*/pinned);
    at::Tensor logits;
    {
      AutocastScope autocast(amp);
      logits = net->forward(x);
    }
    at::Tensor valid = at::tensor(std::vector<float>(batch.valid.begin(), batch.valid.end())).unsqueeze(1);
    rows.push_back(at::cat({logits.to(at::kFloat), batch.targets.to(device), valid.to(device)}, 1));
    ids.push_back(at::tensor(batch.indices, at::kLong).to(device));
  }
  if (was_training) net->train();
  at::Tensor local_rows = rows.empty() ? at::zeros({0, 2 * kNumLabels + 1}, at::TensorOptions(device).dtype(at::kFloat))
                                       : at::cat(rows, 0);
  at::Tensor local_ids = ids.empty() ? at::zeros({0}, at::TensorOptions(device).dtype(at::kLong)) : at::cat(ids, 0);
  at::Tensor all_rows = ddp::util::allgather_rows(pg, local_rows).cpu().contiguous();
  at::Tensor all_ids = ddp::util::allgather_rows(pg, local_ids).cpu().contiguous();

  Predictions p;
  const int64_t n = all_rows.size(0);
  p.indices.assign(all_ids.data_ptr<int64_t>(), all_ids.data_ptr<int64_t>() + n);
  p.logits.resize(static_cast<size_t>(n * kNumLabels));
  p.targets.resize(static_cast<size_t>(n * kNumLabels));
  p.valid.resize(static_cast<size_t>(n));
  const float* r = all_rows.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i, r += 2 * kNumLabels + 1) {
    std::copy(r, r + kNumLabels, p.logits.begin() + i * kNumLabels);
    std::copy(r + kNumLabels, r + 2 * kNumLabels, p.targets.begin() + i * kNumLabels);
    p.valid[static_cast<size_t>(i)] = r[2 * kNumLabels] > 0.5f ? 1 : 0;
  }
  return p;
}

}  // namespace train_ranzcr

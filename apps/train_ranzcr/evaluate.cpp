#include "evaluate.h"

#include "amp.h"
#include "data/ranzcr/auc.h"
#include "util/collectives.h"
#include "data/ranzcr/records.h"

#include <ddp/process_group.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

namespace train_ranzcr {
namespace {

using ddp::data::ranzcr::kNumLabels;

// Mean binary cross-entropy with logits over the valid rows.
double bce_of(const Predictions& p) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < p.rows(); ++i) {
    if (!p.valid[static_cast<size_t>(i)]) continue;
    for (int c = 0; c < kNumLabels; ++c) {
      const double x = p.logits[static_cast<size_t>(i * kNumLabels + c)], y = p.targets[static_cast<size_t>(i * kNumLabels + c)];
      sum += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));  // stable BCE with logits
      ++n;
    }
  }
  return n ? sum / n : 0.0;
}

}  // namespace

std::vector<int64_t> strided_share(const std::vector<int64_t>& indices, int rank, int world) {
  std::vector<int64_t> share;
  for (size_t i = static_cast<size_t>(rank); i < indices.size(); i += static_cast<size_t>(world)) {
    share.push_back(indices[i]);
  }
  return share;
}

Predictions predict_all(const std::shared_ptr<ddp::models::Classifier>& net, ddp::data::ranzcr::BatchLoader& loader,
                        const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                        bool amp) {
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

void fill_validation_metrics(const Predictions& p, EpochMetrics* m) {
  std::vector<float> scores, targets;
  for (int64_t i = 0; i < p.rows(); ++i) {
    if (!p.valid[static_cast<size_t>(i)]) continue;
    scores.insert(scores.end(), p.logits.begin() + i * kNumLabels, p.logits.begin() + (i + 1) * kNumLabels);
    targets.insert(targets.end(), p.targets.begin() + i * kNumLabels, p.targets.begin() + (i + 1) * kNumLabels);
  }
  m->val_images = static_cast<int64_t>(scores.size() / kNumLabels);
  if (m->val_images == 0) return;
  m->val_loss = bce_of(p);
  // AUC depends only on the order of the scores: logits order like probabilities.
  auto report = ddp::data::ranzcr::column_aucs(scores, targets, kNumLabels);
  m->column_auc = report.per_column;
  for (int c : report.single_class) m->single_class_columns.push_back(ddp::data::ranzcr::label_columns()[c]);
  if (report.columns_used > 0) m->auc = report.mean;
}

ddp::trainer::EvalPoint eval_point(const EpochMetrics& m) {
  ddp::trainer::EvalPoint p;
  p.epoch = m.epoch;
  p.global_step = m.global_step;
  p.katib.push_back({"train_loss", m.loss});
  if (m.val_loss) p.katib.push_back({"eval_loss", *m.val_loss});
  if (m.auc) p.katib.push_back({"auc", *m.auc});
  p.katib.push_back({"lr", m.lr, "%.6g"});
  p.katib.push_back({"images_per_sec", m.images_per_sec, "%.1f"});
  p.fields.number("train_loss", m.loss)
      .number("eval_loss", m.val_loss)
      .number("auc", m.auc)
      .numbers("column_auc", m.column_auc)
      .strings("single_class_columns", m.single_class_columns)
      .integer("val_images", m.val_images)
      .number("lr", m.lr)
      .number("images_per_sec", m.images_per_sec)
      .number("epoch_seconds", m.epoch_seconds)
      .number("data_wait_s", m.data_wait_s)
      .integer("bad_images", m.bad_images);
  return p;
}

}  // namespace train_ranzcr

#pragma once
// Forward passes over a list of records shared out across ranks without padding (rank r takes
// positions r, r + W, ...), gathered on every rank: validation and prediction. And what a
// validation reports: the Kaggle metric (mean ROC AUC over the label columns) and the BCE loss.

#include "data/ranzcr/loader.h"
#include "models/classifier.h"
#include "trainer/reporter.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddp {
class ProcessGroup;
}

namespace train_ranzcr {

struct Predictions {
  std::vector<int64_t> indices;  ///< record index of each row, all ranks, rank order
  std::vector<float> logits;     ///< [n, 11] row-major
  std::vector<float> targets;    ///< [n, 11]
  std::vector<uint8_t> valid;    ///< 0: image could not be decoded (--skip-bad-images)
  int64_t rows() const { return static_cast<int64_t>(indices.size()); }
};

/// This rank's share of `indices`: every world-th entry from `rank` on.
std::vector<int64_t> strided_share(const std::vector<int64_t>& indices, int rank, int world);

/// Runs `net` (eval mode, no grad, bf16 autocast when `amp`) over this rank's share of `indices`
/// through `loader`, and gathers every rank's rows. Collective.
Predictions predict_all(const std::shared_ptr<ddp::models::Classifier>& net, ddp::data::ranzcr::BatchLoader& loader,
                        const std::vector<int64_t>& indices, ddp::ProcessGroup& pg, const c10::Device& device,
                        bool amp);

/// One epoch's numbers: training, and validation when there is a validation set.
struct EpochMetrics {
  int64_t epoch = 0;  ///< 1-based, as printed
  int64_t global_step = 0;
  double loss = 0;                                ///< mean training loss of the epoch, all ranks
  std::optional<double> val_loss;                 ///< absent without a validation set
  std::optional<double> auc;                      ///< mean ROC AUC over the columns with both classes
  std::vector<std::optional<double>> column_auc;  ///< per label column (absent: single class)
  std::vector<std::string> single_class_columns;
  double lr = 0;
  double epoch_seconds = 0;    ///< training + validation
  double images_per_sec = 0;   ///< training images per second, all ranks
  double data_wait_s = 0;      ///< rank 0's time blocked on the loader during training
  int64_t bad_images = 0;
  int64_t val_images = 0;
};

/// val_loss, auc, column_auc, single_class_columns and val_images of the valid rows of `p`.
void fill_validation_metrics(const Predictions& p, EpochMetrics* m);

/// The evaluation point: "epoch=3 train_loss=... eval_loss=... auc=... lr=... images_per_sec=..." for
/// the metric line (eval_loss and auc when known; docs/KUBEFLOW.md's vocabulary) and the eval record
/// (train_loss, eval_loss: validation or null, auc, column_auc,
/// single_class_columns, val_images, lr, images_per_sec, epoch_seconds, data_wait_s, bad_images).
ddp::trainer::EvalPoint eval_point(const EpochMetrics& m);

}  // namespace train_ranzcr

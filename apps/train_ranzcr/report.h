#pragma once
// What rank 0 of train_ranzcr tells the world (the same conventions as train_cifar10):
//   - progress: a redrawn bar on a terminal (stderr), plain lines every --log-interval steps otherwise;
//   - one Katib-style metrics line on stdout per validation:
//       epoch=3 loss=0.241187 val_loss=0.229010 auc=0.913204 lr=0.001
//     (loss: mean training loss of the epoch; auc: mean ROC AUC over the label columns);
//   - --metrics-file: JSON lines, {"type":"train",...} every --log-interval steps and
//     {"type":"eval",...} per validation, {"type":"summary",...} at the end.
// Other ranks construct it inactive; every call is then a no-op.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/metrics_file.h"
#include "trainer/progress_line.h"

namespace train_ranzcr {

struct StepPoint {
  int64_t epoch = 0;  ///< 1-based
  int64_t epochs = 0;
  int64_t global_step = 0;
  int64_t step_in_epoch = 0;
  int64_t steps_in_epoch = 0;
  double loss = 0;            ///< mean over rank 0's batches since the last point
  double images_per_sec = 0;  ///< all ranks, since the last point
};

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

class Reporter {
 public:
  /// `active`: this is rank 0. `progress`: auto | bar | plain. `metrics_file` may be empty.
  Reporter(bool active, const std::string& progress, const std::string& metrics_file);

  bool active() const { return active_; }
  /// Every --log-interval steps (and at an epoch's last step).
  void train_point(const StepPoint& p);
  /// Per validation (every epoch end).
  void epoch_end(const EpochMetrics& m);
  /// A JSON object (already serialised) appended to the metrics file, e.g. the final summary.
  void metrics_record(const std::string& json_object);

 private:
  bool active_;
  ddp::trainer::ProgressLine progress_;
  ddp::trainer::MetricsFile metrics_;
};

using ddp::trainer::json_number;
using ddp::trainer::json_string;

}  // namespace train_ranzcr

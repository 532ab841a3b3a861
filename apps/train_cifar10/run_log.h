#pragma once
// What rank 0 tells the world while training:
//   - progress: a redrawn bar on a terminal, plain "Train Epoch" lines (as the seed prints) otherwise;
//   - Katib-style metric lines on stdout after every evaluation: "epoch=3 loss=0.512 accuracy=0.873";
//   - a JSON-lines metrics file (--metrics-file): one object per log interval and per evaluation.
// Other ranks construct it disabled; every call is then a no-op.
//
//   RunLog log(RunLogOptions().enabled(rank == 0).metrics_file(path).progress("auto"));
//   log.train_step({...});
//   log.evaluation({...});

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/metrics_file.h"
#include "trainer/progress_line.h"

namespace train_cifar10 {

struct TrainPoint {
  int64_t epoch = 0;            ///< 1-based, as printed
  int64_t epochs = 0;
  int64_t global_step = 0;
  int64_t step_in_epoch = 0;    ///< steps done in this epoch
  int64_t steps_in_epoch = 0;
  int64_t samples_in_epoch = 0; ///< this rank's samples done in this epoch
  int64_t samples_per_epoch = 0;///< this rank's samples per epoch
  double loss = 0;              ///< mean training loss over the interval (rank 0's batches)
  double images_per_sec = 0;    ///< all ranks together, over the interval
};

struct EvalPoint {
  int64_t epoch = 0;
  int64_t global_step = 0;
  double loss = 0;      ///< mean cross-entropy over the whole test set
  double accuracy = 0;  ///< fraction correct over the whole test set
  int64_t correct = 0, total = 0;
  std::vector<double> per_class_accuracy;
  double train_images_per_sec = 0;  ///< the epoch's training throughput, all ranks
  double epoch_seconds = 0;         ///< training + evaluation wall time of the epoch
};

struct RunLogOptions {
  RunLogOptions& enabled(bool v) { enabled_ = v; return *this; }
  RunLogOptions& metrics_file(std::string v) { metrics_file_ = std::move(v); return *this; }
  /// "auto" | "bar" | "plain".
  RunLogOptions& progress(std::string v) { progress_ = std::move(v); return *this; }
  bool enabled_ = true;
  std::string metrics_file_;
  std::string progress_ = "auto";
};

class RunLog {
 public:
  explicit RunLog(RunLogOptions options);

  void train_step(const TrainPoint& p);
  void evaluation(const EvalPoint& p);
  /// A free-form JSON object (already serialised) for the metrics file, e.g. the run summary.
  void metrics_record(const std::string& json_object);

  bool bar() const { return progress_.bar(); }

 private:
  bool enabled_;
  ddp::trainer::ProgressLine progress_;
  ddp::trainer::MetricsFile metrics_;
};

using ddp::trainer::json_number;

}  // namespace train_cifar10

#pragma once
// What rank 0 of a trainer tells the world, one way for every trainer:
//   - progress: a bar redrawn on a terminal (stderr), or plain logged lines
//       Train Epoch: 1 [640/25000 (3%)] Loss: 2.301000 (4100 images/s) elapsed 1:23 eta 4:56
//     at every train interval point: the wall time of this process's training and the time to the
//     run's last step (run_eta.h: which rate, why a resume restarts elapsed; "eta ?" until known);
//   - after every evaluation, the metric line on stdout, after the task's own log lines:
//       2026-12-01T23:16:11.123Z epoch=3 eval_loss=0.512000 accuracy=0.873000 images_per_sec=4100.0
//     an RFC 3339 timestamp first (Katib's StdOut collector takes a line's time from its first word),
//     then name=value pairs (Katib's default filter); the names are docs/KUBEFLOW.md's vocabulary;
//   - --metrics-file: JSON lines {"type":"train",...,"elapsed_s":83.2,"eta_s":296.1} per interval point
//     (eta_s null while unknown), {"type":"eval",...} per evaluation, {"type":"summary",...} at the end;
//   - --katib-metrics-file: per evaluation, the metric line as the JSON object Katib's File collector
//     (format JSON) reads: {"timestamp":"<RFC 3339>","epoch":"3","eval_loss":"0.512000",...}, values
//     as strings. A non-finite value is left off both (Katib reads only numbers) and logged (WARN);
//   - --tensorboard-dir: TensorBoard scalars (tensorboard_writer.h) from the same points: per train
//     point train/loss, train/lr, train/images_per_sec; per evaluation epoch/<name> for each Katib
//     metric of the line, so both read the same names. Steps are global steps.
// Points carry the numbers, the task decides which metrics an evaluation has. Other ranks construct
// a disabled Reporter; every call is then a no-op.
//
//   Reporter reporter(ReporterOptions().enabled(rank0).progress("auto").metrics_file(path).katib_metrics_file(k));
//   reporter.start(progress.global_step);  // after resuming (0: fresh); before the first point; starts elapsed
//   reporter.train_interval(point);       // every --log-interval steps and at the epoch's last step
//   reporter.evaluation(eval_point);      // every epoch end
//   reporter.summary(JsonRecord().integer("steps", 1200));

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/json_record.h"
#include "trainer/metrics_file.h"
#include "trainer/progress_line.h"
#include "trainer/run_eta.h"

namespace ddp {
struct TrainingProgress;
}

namespace ddp::trainer {
namespace tensorboard {
class EventFileWriter;
}

/// What "[done/total]" in a plain progress line counts within the epoch.
enum class ProgressCount { kSamples, kSteps };

struct ReporterOptions {
  /// This rank reports (rank 0).
  TORCH_ARG(bool, enabled) = true;
  /// auto (a bar on a terminal) | bar | plain.
  TORCH_ARG(std::string, progress) = "auto";
  /// JSON lines file; empty: none.
  TORCH_ARG(std::string, metrics_file);
  /// Katib's JSON lines (File collector, format JSON); empty: none.
  TORCH_ARG(std::string, katib_metrics_file);
  TORCH_ARG(ProgressCount, count) = ProgressCount::kSamples;
  /// Decimals of images/s in progress lines (0 for thousands a second, 1 for large slow images).
  TORCH_ARG(int, rate_decimals) = 0;
  /// TensorBoard event files here (tensorboard_writer.h); empty: none.
  TORCH_ARG(std::string, tensorboard_dir);
  /// --max-steps: the run ends at this global step (0: after the last epoch); the ETA counts to it.
  TORCH_ARG(int64_t, max_steps) = 0;
  /// Seconds on a monotonic clock for elapsed and ETA (run_eta.h); empty: the steady clock. Tests
  /// pass a fake one.
  TORCH_ARG(RunEta::Clock, clock);
};

/// Training since the previous point.
struct TrainPoint {
  int64_t epoch = 0;  ///< 1-based, as printed
  int64_t epochs = 0;
  int64_t global_step = 0;
  int64_t step_in_epoch = 0;      ///< steps done in this epoch
  int64_t steps_in_epoch = 0;
  int64_t samples_in_epoch = 0;   ///< this rank's samples done in this epoch
  int64_t samples_per_epoch = 0;  ///< this rank's samples per epoch
  double loss = 0;                ///< mean training loss over the interval (rank 0's batches): train_loss
  double images_per_sec = 0;      ///< all ranks together, over the interval
  double lr = 0;                  ///< learning rate of the interval's last step (the task sets it)
};

/// The TrainPoint at `progress` (loss and images_per_sec are the interval's: IntervalMeter fills them),
/// for a run of `epochs` epochs of `steps_in_epoch` steps and `samples_per_epoch` of this rank's samples.
TrainPoint train_point(const ddp::TrainingProgress& progress, int64_t epochs, int64_t steps_in_epoch,
                       int64_t samples_per_epoch);

/// Optimizer steps from `p` to the run's end: the rest of this epoch and the epochs after it, or fewer
/// when --max-steps (`max_steps` > 0) ends the run sooner. Counted from the epoch shape, not from
/// epochs * steps_in_epoch - global_step, which a resume with another world size would break.
int64_t steps_left(const TrainPoint& p, int64_t max_steps);

/// One value of the metric line: " name=<value formatted with `format`>" (a name of the vocabulary in
/// docs/KUBEFLOW.md), and the same text as a string in the Katib file.
struct KatibMetric {
  std::string name;
  double value = 0;
  const char* format = "%.6f";
};

/// An evaluation at an epoch's end (or at --max-steps).
struct EvalPoint {
  int64_t epoch = 0;  ///< 1-based, as printed
  int64_t global_step = 0;
  std::vector<std::string> log_lines;  ///< logged (INFO) before the metric line, e.g. "Test set: ..."
  std::vector<KatibMetric> katib;      ///< after "<timestamp> epoch=N" on the metric line, in this order
  JsonRecord fields;                   ///< the eval record's fields after type, step and epoch
};

class Reporter {
 public:
  explicit Reporter(const ReporterOptions& options);
  ~Reporter();

  bool enabled() const { return enabled_; }
  /// The run starts (0) or resumes after global step `global_step`; once, before the first point.
  void start(int64_t global_step);
  void train_interval(const TrainPoint& p);
  void evaluation(const EvalPoint& p);
  /// {"type":"summary", <fields>} in the metrics file.
  void summary(const JsonRecord& fields);

 private:
  bool enabled_;
  ProgressCount count_;
  int rate_decimals_;
  int64_t max_steps_;
  RunEta eta_;
  ProgressLine progress_;
  MetricsFile metrics_;
  std::unique_ptr<tensorboard::EventFileWriter> tensorboard_;
  MetricsFile katib_;
};

}  // namespace ddp::trainer

#pragma once
// What train_ranzcr tells the world, from rank 0: a progress bar on a terminal (stderr), one
// Katib-parsable line per epoch on stdout
//   epoch=3 loss=0.2412 val_loss=0.2290 auc=0.9132 lr=0.001
// and, with --metrics-file, one JSON object per epoch (JSON Lines).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace train_ranzcr {

struct EpochMetrics {
  int epoch = 0;  ///< 1-based, as printed
  double loss = 0;                                ///< mean training loss over all ranks
  std::optional<double> val_loss;                 ///< absent without a validation set
  std::optional<double> auc;                      ///< mean ROC AUC over the columns with both classes
  std::vector<std::optional<double>> column_auc;  ///< per label column (absent: single class)
  std::vector<std::string> single_class_columns;
  double lr = 0;
  double seconds = 0;
  double images_per_s = 0;                        ///< training images per second, all ranks
  double data_wait_s = 0;                         ///< rank 0's time blocked on the loader
  int64_t bad_images = 0;
  int64_t val_images = 0;
};

class Reporter {
 public:
  /// `active`: this is rank 0. `progress`: auto | on | off. `metrics_file` may be empty.
  Reporter(bool active, const std::string& progress, const std::string& metrics_file);
  ~Reporter();

  void begin_epoch(int epoch, int epochs, int64_t steps);
  /// After each step: redraws the bar at most 5 times a second.
  void step(int64_t done, double loss);
  void end_epoch(const EpochMetrics& m);
  /// A JSON object (already serialised) appended to the metrics file, e.g. the final summary.
  void write_json(const std::string& object);

 private:
  void clear_bar();
  bool active_;
  bool bar_;
  std::string metrics_file_;
  int epoch_ = 0, epochs_ = 0;
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point epoch_start_, last_draw_;
};

/// `"x"` with JSON escapes.
std::string json_string(const std::string& s);
/// A finite number as %.6g, else null.
std::string json_number(double v);

}  // namespace train_ranzcr

#pragma once
// Training between two progress points: the summed loss stays on the device (no sync per step),
// read once per point; images/s for all ranks over the interval's wall time.
//
//   IntervalMeter meter(at::TensorOptions().device(device));
//   meter.add(loss, batch_images);                     // every step
//   if (log_now) reporter.train_interval(meter.take(point, world));   // one sync, then reset

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <chrono>
#include <cstdint>

#include "trainer/reporter.h"

namespace ddp::trainer {

class IntervalMeter {
 public:
  /// `sum_options`: where and in which dtype the loss is summed (the loss's device).
  explicit IntervalMeter(const c10::TensorOptions& sum_options);

  /// One optimizer step's loss (any shape-[] tensor; detached here) and this rank's images.
  void add(const at::Tensor& loss, int64_t images);
  /// Fills `p`'s loss (mean over the interval's steps) and images_per_sec (this rank's images times
  /// `world_size`), starts a new interval and returns `p`.
  TrainPoint take(TrainPoint p, int world_size);

 private:
  at::Tensor sum_;
  int64_t steps_ = 0;
  int64_t images_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ddp::trainer

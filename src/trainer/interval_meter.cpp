#include "trainer/interval_meter.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>

namespace ddp::trainer {

IntervalMeter::IntervalMeter(const c10::TensorOptions& sum_options)
    : sum_(at::zeros({}, sum_options)), start_(std::chrono::steady_clock::now()) {}

void IntervalMeter::add(const at::Tensor& loss, int64_t images) {
  at::NoGradGuard no_grad;
  sum_.add_(loss.detach().to(sum_.scalar_type()));  // same dtype: no copy
  ++steps_;
  images_ += images;
}

TrainPoint IntervalMeter::take(TrainPoint p, int world_size) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  p.loss = sum_.item<double>() / static_cast<double>(std::max<int64_t>(1, steps_));  // the one sync per point
  p.images_per_sec = static_cast<double>(images_ * world_size) / std::max(1e-9, seconds);
  sum_.zero_();
  steps_ = images_ = 0;
  start_ = std::chrono::steady_clock::now();
  return p;
}

}  // namespace ddp::trainer

#pragma once
// Learning rate as a function of where training stands, so a resumed run continues the same curve.
//   none:   lr
//   cosine: lr * (1 + cos(pi * global_step / (epochs * steps_per_epoch))) / 2, per step
//   step:   lr * step_gamma ^ floor(epoch / step_epochs)

#include "options.h"

#include <ddp/checkpoint.h>

#include <cmath>
#include <cstdint>

namespace train_ranzcr {

class LrSchedule {
 public:
  LrSchedule(const Options& o, int64_t steps_per_epoch)
      : kind_(o.schedule), lr_(o.lr), total_steps_(static_cast<double>(o.epochs) * steps_per_epoch),
        step_epochs_(o.step_epochs), gamma_(o.step_gamma) {}

  double at(const ddp::TrainingProgress& p) const {
    if (kind_ == "cosine") {
      const double t = total_steps_ > 0 ? std::min(1.0, static_cast<double>(p.global_step) / total_steps_) : 1.0;
      return lr_ * 0.5 * (1.0 + std::cos(M_PI * t));
    }
    if (kind_ == "step") return lr_ * std::pow(gamma_, static_cast<double>(p.epoch / step_epochs_));
    return lr_;
  }

 private:
  std::string kind_;
  double lr_;
  double total_steps_;
  int step_epochs_;
  double gamma_;
};

}  // namespace train_ranzcr

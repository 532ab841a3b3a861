#include "trainer/run_eta.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace ddp::trainer {

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RunEta::RunEta(Clock now) : now_(now ? std::move(now) : Clock(steady_seconds)), start_(now_()) {}

void RunEta::start() {
  start_ = now_();
  have_first_ = false;
}

RunTime RunEta::at(int64_t global_step, int64_t steps_left) {
  const double now = now_();
  RunTime t;
  t.elapsed_s = now - start_;
  if (steps_left <= 0) {
    t.eta_s = 0.0;  // known without a rate
  } else if (have_first_) {
    const double seconds = now - first_time_;
    const int64_t steps = global_step - first_step_;
    if (seconds > 0 && steps > 0) t.eta_s = static_cast<double>(steps_left) * seconds / static_cast<double>(steps);
  }
  if (!have_first_) {
    have_first_ = true;
    first_time_ = now;
    first_step_ = global_step;
  }
  return t;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds > 1e15) return "?";  // llround would overflow
  const long long total = seconds > 0 ? std::llround(seconds) : 0;
  char text[32];
  if (total < 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
  }
  return text;
}

}  // namespace ddp::trainer

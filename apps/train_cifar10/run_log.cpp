#include "run_log.h"

#include <ddp/logging.h>

#include <cstdio>
#include <sstream>

namespace train_cifar10 {

// Disabled ranks open no metrics file and never draw.
RunLog::RunLog(RunLogOptions options)
    : enabled_(options.enabled_),
      progress_(enabled_ ? options.progress_ : "plain"),
      metrics_(enabled_ ? options.metrics_file_ : "") {}

void RunLog::train_step(const TrainPoint& p) {
  if (!enabled_) return;
  const double pct = p.samples_per_epoch ? 100.0 * static_cast<double>(p.samples_in_epoch) / static_cast<double>(p.samples_per_epoch) : 0;
  if (progress_.bar()) {
    char text[256];
    std::snprintf(text, sizeof text, "epoch %lld/%lld %s %5.1f%% step %lld/%lld loss %.4f %.0f img/s  ",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.epochs),
                  ddp::trainer::bar_cells(pct / 100.0).c_str(), pct, static_cast<long long>(p.step_in_epoch),
                  static_cast<long long>(p.steps_in_epoch), p.loss, p.images_per_sec);
    progress_.redraw(text);
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "Train Epoch: %lld [%lld/%lld (%.0f%%)] Loss: %.6f (%.0f images/s)",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.samples_in_epoch),
                  static_cast<long long>(p.samples_per_epoch), pct, p.loss, p.images_per_sec);
    DDP_LOG(INFO) << line;
  }
  if (metrics_.enabled()) {
    std::ostringstream j;
    j << "{\"type\":\"train\",\"step\":" << p.global_step << ",\"epoch\":" << p.epoch << ",\"loss\":" << json_number(p.loss)
      << ",\"images_per_sec\":" << json_number(p.images_per_sec) << "}";
    metrics_record(j.str());
  }
}

void RunLog::evaluation(const EvalPoint& p) {
  if (!enabled_) return;
  progress_.end_line();
  char line[256];
  std::snprintf(line, sizeof line, "Test set: Average loss: %.4f, Accuracy: %lld/%lld (%.2f%%), %.1f s, train %.0f images/s",
                p.loss, static_cast<long long>(p.correct), static_cast<long long>(p.total), 100.0 * p.accuracy,
                p.epoch_seconds, p.train_images_per_sec);
  DDP_LOG(INFO) << line;
  // Katib's StdOut metrics collector parses name=value pairs on stdout.
  std::printf("epoch=%lld loss=%.6f accuracy=%.6f\n", static_cast<long long>(p.epoch), p.loss, p.accuracy);
  std::fflush(stdout);
  if (metrics_.enabled()) {
    std::ostringstream j;
    j << "{\"type\":\"eval\",\"step\":" << p.global_step << ",\"epoch\":" << p.epoch << ",\"loss\":" << json_number(p.loss)
      << ",\"accuracy\":" << json_number(p.accuracy) << ",\"correct\":" << p.correct << ",\"total\":" << p.total
      << ",\"per_class_accuracy\":[";
    for (size_t i = 0; i < p.per_class_accuracy.size(); ++i) j << (i ? "," : "") << json_number(p.per_class_accuracy[i]);
    j << "],\"images_per_sec\":" << json_number(p.train_images_per_sec) << ",\"epoch_seconds\":" << json_number(p.epoch_seconds)
      << "}";
    metrics_record(j.str());
  }
}

void RunLog::metrics_record(const std::string& json_object) {
  metrics_.append(json_object);  // disabled on other ranks
}

}  // namespace train_cifar10

#include "run_log.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

namespace train_cifar10 {

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

RunLog::RunLog(RunLogOptions options) : enabled_(options.enabled_) {
  if (!enabled_) return;
  if (options.progress_ == "bar") bar_ = true;
  else if (options.progress_ == "auto") bar_ = ::isatty(STDERR_FILENO) == 1;
  if (!options.metrics_file_.empty()) {
    metrics_path_ = options.metrics_file_;
    metrics_ = std::fopen(metrics_path_.c_str(), "a");
    if (!metrics_) throw ddp::ConfigError("--metrics-file " + metrics_path_ + ": cannot open for appending (" + std::strerror(errno) + ")");
  }
}

RunLog::~RunLog() {
  if (enabled_) end_bar_line();
  if (metrics_) std::fclose(metrics_);
}

void RunLog::end_bar_line() {
  if (bar_open_) {
    std::fputc('\n', stderr);
    bar_open_ = false;
  }
}

void RunLog::train_step(const TrainPoint& p) {
  if (!enabled_) return;
  const double pct = p.samples_per_epoch ? 100.0 * static_cast<double>(p.samples_in_epoch) / static_cast<double>(p.samples_per_epoch) : 0;
  if (bar_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(pct / 100.0 * kWidth + 0.5);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\repoch %lld/%lld [%s] %5.1f%% step %lld/%lld loss %.4f %.0f img/s  ",
                 static_cast<long long>(p.epoch), static_cast<long long>(p.epochs), bar.c_str(), pct,
                 static_cast<long long>(p.step_in_epoch), static_cast<long long>(p.steps_in_epoch), p.loss, p.images_per_sec);
    std::fflush(stderr);
    bar_open_ = true;
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "Train Epoch: %lld [%lld/%lld (%.0f%%)] Loss: %.6f (%.0f images/s)",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.samples_in_epoch),
                  static_cast<long long>(p.samples_per_epoch), pct, p.loss, p.images_per_sec);
    DDP_LOG(INFO) << line;
  }
  if (metrics_) {
    std::ostringstream j;
    j << "{\"type\":\"train\",\"step\":" << p.global_step << ",\"epoch\":" << p.epoch << ",\"loss\":" << json_number(p.loss)
      << ",\"images_per_sec\":" << json_number(p.images_per_sec) << "}";
    metrics_record(j.str());
  }
}

void RunLog::evaluation(const EvalPoint& p) {
  if (!enabled_) return;
  end_bar_line();
  char line[256];
  std::snprintf(line, sizeof line, "Test set: Average loss: %.4f, Accuracy: %lld/%lld (%.2f%%), %.1f s, train %.0f images/s",
                p.loss, static_cast<long long>(p.correct), static_cast<long long>(p.total), 100.0 * p.accuracy,
                p.epoch_seconds, p.train_images_per_sec);
  DDP_LOG(INFO) << line;
  // Katib's StdOut metrics collector parses name=value pairs on stdout.
  std::printf("epoch=%lld loss=%.6f accuracy=%.6f\n", static_cast<long long>(p.epoch), p.loss, p.accuracy);
  std::fflush(stdout);
  if (metrics_) {
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
  if (!enabled_ || !metrics_) return;
  std::fputs(json_object.c_str(), metrics_);
  std::fputc('\n', metrics_);
  if (std::fflush(metrics_) != 0)
    throw ddp::DataError("--metrics-file " + metrics_path_ + ": write failed (" + std::strerror(errno) + ")");
}

}  // namespace train_cifar10

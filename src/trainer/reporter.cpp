#include "trainer/reporter.h"

#include <ddp/checkpoint.h>
#include <ddp/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "trainer/tensorboard_writer.h"
#include "util/rfc3339.h"

namespace ddp::trainer {

TrainPoint train_point(const ddp::TrainingProgress& progress, int64_t epochs, int64_t steps_in_epoch,
                       int64_t samples_per_epoch) {
  TrainPoint p;
  p.epoch = progress.epoch + 1;
  p.epochs = epochs;
  p.global_step = progress.global_step;
  p.step_in_epoch = progress.step_in_epoch;
  p.steps_in_epoch = steps_in_epoch;
  p.samples_in_epoch = progress.samples_in_epoch;
  p.samples_per_epoch = samples_per_epoch;
  return p;
}

int64_t steps_left(const TrainPoint& p, int64_t max_steps) {
  int64_t left = (p.steps_in_epoch - p.step_in_epoch) + (p.epochs - p.epoch) * p.steps_in_epoch;
  if (max_steps > 0) left = std::min(left, max_steps - p.global_step);
  return std::max<int64_t>(0, left);
}

// Disabled ranks open no metrics file and never draw.
Reporter::Reporter(const ReporterOptions& options)
    : enabled_(options.enabled()),
      count_(options.count()),
      rate_decimals_(options.rate_decimals()),
      max_steps_(options.max_steps()),
      eta_(options.clock()),
      progress_(enabled_ ? options.progress() : "plain"),
      metrics_(enabled_ ? options.metrics_file() : ""),
      katib_(enabled_ ? options.katib_metrics_file() : "", "--katib-metrics-file") {
  if (enabled_ && !options.tensorboard_dir().empty())
    tensorboard_ = std::make_unique<tensorboard::EventFileWriter>(options.tensorboard_dir());
}

Reporter::~Reporter() = default;

void Reporter::start(int64_t global_step) {
  eta_.start();
  if (tensorboard_) tensorboard_->start(global_step);
}

void Reporter::train_interval(const TrainPoint& p) {
  if (!enabled_) return;
  const bool samples = count_ == ProgressCount::kSamples;
  const int64_t done = samples ? p.samples_in_epoch : p.step_in_epoch;
  const int64_t total = samples ? p.samples_per_epoch : p.steps_in_epoch;
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const RunTime time = eta_.at(p.global_step, steps_left(p, max_steps_));
  const std::string elapsed = format_duration(time.elapsed_s);
  const std::string eta = time.eta_s ? format_duration(*time.eta_s) : "?";
  char text[320];
  if (progress_.bar()) {
    std::snprintf(text, sizeof text,
                  "epoch %lld/%lld %s %5.1f%% step %lld/%lld loss %.4f %.*f images/s elapsed %s eta %s  ",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.epochs), bar_cells(fraction).c_str(),
                  100.0 * fraction, static_cast<long long>(p.step_in_epoch), static_cast<long long>(p.steps_in_epoch),
                  p.loss, rate_decimals_, p.images_per_sec, elapsed.c_str(), eta.c_str());
    progress_.redraw(text);
  } else {
    // Through the logger: timestamped and ranked like every other line.
    std::snprintf(text, sizeof text,
                  "Train Epoch: %lld [%lld/%lld (%.0f%%)] Loss: %.6f (%.*f images/s) elapsed %s eta %s",
                  static_cast<long long>(p.epoch), static_cast<long long>(done), static_cast<long long>(total),
                  100.0 * fraction, p.loss, rate_decimals_, p.images_per_sec, elapsed.c_str(), eta.c_str());
    DDP_LOG(INFO) << text;
  }
  if (metrics_.enabled()) {
    JsonRecord r;
    r.string("type", "train").integer("step", p.global_step).integer("epoch", p.epoch).number("train_loss", p.loss);
    r.number("images_per_sec", p.images_per_sec).number("elapsed_s", time.elapsed_s).number("eta_s", time.eta_s);
    metrics_.append(r.str());
  }
  if (tensorboard_) {
    tensorboard_->scalars(p.global_step, {{"train/loss", static_cast<float>(p.loss)},
                                          {"train/lr", static_cast<float>(p.lr)},
                                          {"train/images_per_sec", static_cast<float>(p.images_per_sec)}});
  }
}

void Reporter::evaluation(const EvalPoint& p) {
  if (!enabled_) return;
  progress_.end_line();
  for (const auto& line : p.log_lines) DDP_LOG(INFO) << line;
  // One timestamp for the line and the Katib record: they are the same observation.
  const std::string now = util::rfc3339_now();
  std::string line = now + " epoch=" + std::to_string(p.epoch);
  JsonRecord katib;
  katib.string("timestamp", now).string("epoch", std::to_string(p.epoch));
  for (const auto& m : p.katib) {
    if (!std::isfinite(m.value)) {
      // Katib's filter would read "nan" as an empty value, which its early-stopping reader
      // cannot parse: leave the metric out, say so.
      DDP_LOG(WARN) << m.name << " is " << m.value << " at epoch " << p.epoch
                    << ": left off the metric line (Katib reads only numbers)";
      continue;
    }
    char value[64];
    std::snprintf(value, sizeof value, m.format, m.value);
    line += " " + m.name + "=" + value;
    katib.string(m.name, value);
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  katib_.append(katib.str());
  if (metrics_.enabled()) {
    JsonRecord r;
    r.string("type", "eval").integer("step", p.global_step).integer("epoch", p.epoch).append(p.fields);
    metrics_.append(r.str());
  }
  if (tensorboard_) {
    std::vector<tensorboard::Scalar> scalars;
    for (const auto& m : p.katib) scalars.push_back({"epoch/" + m.name, static_cast<float>(m.value)});
    tensorboard_->scalars(p.global_step, scalars);
    tensorboard_->sync();  // an epoch's records survive even a crash of the machine
  }
}

void Reporter::summary(const JsonRecord& fields) {
  if (!metrics_.enabled()) return;  // also disabled on other ranks
  JsonRecord r;
  metrics_.append(r.string("type", "summary").append(fields).str());
}

}  // namespace ddp::trainer

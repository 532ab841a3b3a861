#include "report.h"

#include <ddp/logging.h>

#include <cstdio>
#include <sstream>

namespace train_ranzcr {

// Other ranks open no metrics file and never draw.
Reporter::Reporter(bool active, const std::string& progress, const std::string& metrics_file)
    : active_(active), progress_(active ? progress : "plain"), metrics_(active ? metrics_file : "") {}

void Reporter::train_point(const StepPoint& p) {
  if (!active_) return;
  const double done = p.steps_in_epoch > 0 ? static_cast<double>(p.step_in_epoch) / p.steps_in_epoch : 1.0;
  if (progress_.bar()) {
    char text[256];
    std::snprintf(text, sizeof text, "epoch %lld/%lld %s %lld/%lld loss %.4f %.1f images/s ",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.epochs), ddp::trainer::bar_cells(done).c_str(),
                  static_cast<long long>(p.step_in_epoch), static_cast<long long>(p.steps_in_epoch), p.loss,
                  p.images_per_sec);
    progress_.redraw(text);
  } else {
    // Through the logger, as train_cifar10's: timestamped and ranked like every other line.
    char line[256];
    std::snprintf(line, sizeof line, "Train Epoch: %lld [%lld/%lld (%.0f%%)] Loss: %.6f (%.1f images/s)",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.step_in_epoch),
                  static_cast<long long>(p.steps_in_epoch), 100.0 * done, p.loss, p.images_per_sec);
    DDP_LOG(INFO) << line;
  }
  if (metrics_.enabled()) {
    std::ostringstream j;
    j << "{\"type\":\"train\",\"step\":" << p.global_step << ",\"epoch\":" << p.epoch << ",\"loss\":" << json_number(p.loss)
      << ",\"images_per_sec\":" << json_number(p.images_per_sec) << "}";
    metrics_record(j.str());
  }
}

void Reporter::epoch_end(const EpochMetrics& m) {
  if (!active_) return;
  progress_.end_line();
  // Katib's default collector reads name=value pairs from stdout.
  std::string line = "epoch=" + std::to_string(m.epoch);
  char buf[64];
  std::snprintf(buf, sizeof buf, " loss=%.6f", m.loss);
  line += buf;
  if (m.val_loss) {
    std::snprintf(buf, sizeof buf, " val_loss=%.6f", *m.val_loss);
    line += buf;
  }
  if (m.auc) {
    std::snprintf(buf, sizeof buf, " auc=%.6f", *m.auc);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, " lr=%.6g", m.lr);
  line += buf;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (!m.single_class_columns.empty()) {
    std::string names;
    for (const auto& c : m.single_class_columns) names += (names.empty() ? "" : ", ") + c;
    DDP_LOG(WARN) << "ROC AUC undefined (one class in the validation set), left out of the mean: " << names;
  }
  if (!metrics_.enabled()) return;
  std::ostringstream j;
  j << "{\"type\":\"eval\",\"step\":" << m.global_step << ",\"epoch\":" << m.epoch
    << ",\"train_loss\":" << json_number(m.loss) << ",\"loss\":" << (m.val_loss ? json_number(*m.val_loss) : "null")
    << ",\"auc\":" << (m.auc ? json_number(*m.auc) : "null") << ",\"column_auc\":[";
  for (size_t c = 0; c < m.column_auc.size(); ++c) {
    j << (c ? "," : "") << (m.column_auc[c] ? json_number(*m.column_auc[c]) : "null");
  }
  j << "],\"single_class_columns\":[";
  for (size_t c = 0; c < m.single_class_columns.size(); ++c) j << (c ? "," : "") << json_string(m.single_class_columns[c]);
  j << "],\"val_images\":" << m.val_images << ",\"lr\":" << json_number(m.lr)
    << ",\"images_per_sec\":" << json_number(m.images_per_sec) << ",\"epoch_seconds\":" << json_number(m.epoch_seconds)
    << ",\"data_wait_s\":" << json_number(m.data_wait_s) << ",\"bad_images\":" << m.bad_images << "}";
  metrics_record(j.str());
}

void Reporter::metrics_record(const std::string& json_object) {
  metrics_.append(json_object);  // disabled on other ranks
}

}  // namespace train_ranzcr

#include "report.h"

#include <ddp/errors.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

namespace train_ranzcr {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Reporter::Reporter(bool active, const std::string& progress, const std::string& metrics_file)
    : active_(active), metrics_path_(metrics_file) {
  if (!active_) return;
  bar_ = progress == "bar" || (progress == "auto" && ::isatty(STDERR_FILENO));
  if (!metrics_path_.empty()) {
    metrics_ = std::fopen(metrics_path_.c_str(), "a");
    if (!metrics_) {
      throw ddp::ConfigError("--metrics-file '" + metrics_path_ + "' cannot be opened for appending: " +
                             std::strerror(errno));
    }
  }
}

Reporter::~Reporter() {
  end_bar_line();
  if (metrics_) std::fclose(metrics_);
}

void Reporter::end_bar_line() {
  if (bar_open_) {
    std::fputc('\n', stderr);
    bar_open_ = false;
  }
}

void Reporter::train_point(const StepPoint& p) {
  if (!active_) return;
  const double done = p.steps_in_epoch > 0 ? static_cast<double>(p.step_in_epoch) / p.steps_in_epoch : 1.0;
  if (bar_) {
    const int width = 30, filled = static_cast<int>(width * std::min(1.0, done));
    std::fprintf(stderr, "\repoch %lld/%lld [%s%s] %lld/%lld loss %.4f %.1f images/s ",
                 static_cast<long long>(p.epoch), static_cast<long long>(p.epochs),
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), static_cast<long long>(p.step_in_epoch),
                 static_cast<long long>(p.steps_in_epoch), p.loss, p.images_per_sec);
    std::fflush(stderr);
    bar_open_ = true;
  } else {
    std::fprintf(stderr, "Train Epoch: %lld [%lld/%lld (%.0f%%)] Loss: %.6f (%.1f images/s)\n",
                 static_cast<long long>(p.epoch), static_cast<long long>(p.step_in_epoch),
                 static_cast<long long>(p.steps_in_epoch), 100.0 * done, p.loss, p.images_per_sec);
  }
  if (metrics_) {
    std::ostringstream j;
    j << "{\"type\":\"train\",\"step\":" << p.global_step << ",\"epoch\":" << p.epoch << ",\"loss\":" << json_number(p.loss)
      << ",\"images_per_sec\":" << json_number(p.images_per_sec) << "}";
    metrics_record(j.str());
  }
}

void Reporter::epoch_end(const EpochMetrics& m) {
  if (!active_) return;
  end_bar_line();
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
    std::fprintf(stderr, "note: ROC AUC undefined (one class in the validation set), left out of the mean: %s\n",
                 names.c_str());
  }
  if (!metrics_) return;
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
  if (!active_ || !metrics_) return;
  std::fputs(json_object.c_str(), metrics_);
  std::fputc('\n', metrics_);
  if (std::fflush(metrics_) != 0) {
    throw ddp::DataError("cannot append to --metrics-file '" + metrics_path_ + "': " + std::strerror(errno));
  }
}

}  // namespace train_ranzcr

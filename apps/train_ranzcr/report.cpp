#include "report.h"

#include <ddp/errors.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
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
    : active_(active),
      bar_(active && (progress == "on" || (progress == "auto" && ::isatty(STDERR_FILENO)))),
      metrics_file_(active ? metrics_file : "") {
  if (!metrics_file_.empty()) {
    std::ofstream probe(metrics_file_, std::ios::app);
    if (!probe) throw ddp::ConfigError("--metrics-file '" + metrics_file_ + "' cannot be opened for appending");
  }
}

Reporter::~Reporter() { clear_bar(); }

void Reporter::begin_epoch(int epoch, int epochs, int64_t steps) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  epoch_start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

void Reporter::step(int64_t done, double loss) {
  if (!bar_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < steps_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const int width = 30;
  const int filled = steps_ > 0 ? static_cast<int>(width * done / steps_) : width;
  const double elapsed = std::chrono::duration<double>(now - epoch_start_).count();
  const double eta = done > 0 ? elapsed * static_cast<double>(steps_ - done) / done : 0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "\repoch %d/%d [%s%s] %lld/%lld loss %.4f %.0fs<%.0fs ", epoch_, epochs_,
                std::string(static_cast<size_t>(filled), '#').c_str(),
                std::string(static_cast<size_t>(width - filled), '.').c_str(), static_cast<long long>(done),
                static_cast<long long>(steps_), loss, elapsed, eta);
  std::cerr << buf << std::flush;
}

void Reporter::clear_bar() {
  if (bar_) std::cerr << "\r" << std::string(100, ' ') << "\r" << std::flush;
}

void Reporter::end_epoch(const EpochMetrics& m) {
  if (!active_) return;
  clear_bar();
  // Katib's default collector reads name=value pairs from stdout.
  std::ostringstream line;
  line.setf(std::ios::fixed);
  line.precision(4);
  line << "epoch=" << m.epoch << " loss=" << m.loss;
  if (m.val_loss) line << " val_loss=" << *m.val_loss;
  if (m.auc) line << " auc=" << *m.auc;
  line.unsetf(std::ios::fixed);
  line.precision(6);
  line << " lr=" << m.lr;
  std::cout << line.str() << std::endl;
  if (!m.single_class_columns.empty()) {
    std::string names;
    for (const auto& c : m.single_class_columns) names += (names.empty() ? "" : ", ") + c;
    std::cerr << "note: AUC undefined (one class in the validation set) and left out of the mean for: " << names
              << std::endl;
  }
  if (metrics_file_.empty()) return;
  std::ostringstream j;
  j << "{\"event\":\"epoch\",\"epoch\":" << m.epoch << ",\"loss\":" << json_number(m.loss)
    << ",\"val_loss\":" << (m.val_loss ? json_number(*m.val_loss) : "null")
    << ",\"auc\":" << (m.auc ? json_number(*m.auc) : "null") << ",\"column_auc\":[";
  for (size_t c = 0; c < m.column_auc.size(); ++c) {
    j << (c ? "," : "") << (m.column_auc[c] ? json_number(*m.column_auc[c]) : "null");
  }
  j << "],\"single_class_columns\":[";
  for (size_t c = 0; c < m.single_class_columns.size(); ++c) j << (c ? "," : "") << json_string(m.single_class_columns[c]);
  j << "],\"lr\":" << json_number(m.lr) << ",\"seconds\":" << json_number(m.seconds)
    << ",\"images_per_s\":" << json_number(m.images_per_s) << ",\"data_wait_s\":" << json_number(m.data_wait_s)
    << ",\"bad_images\":" << m.bad_images << ",\"val_images\":" << m.val_images << "}";
  write_json(j.str());
}

void Reporter::write_json(const std::string& object) {
  if (!active_ || metrics_file_.empty()) return;
  std::ofstream out(metrics_file_, std::ios::app);
  out << object << "\n";
  if (!out) throw ddp::DataError("cannot append to --metrics-file '" + metrics_file_ + "'");
}

}  // namespace train_ranzcr

#pragma once
// The --metrics-file both trainers write (and --katib-metrics-file): JSON lines, one object per
// record, flushed as written so a killed run keeps what it logged. Plus json_number(), the records'
// number format (strings are quoted by util::json_quote()).
#include <cstdio>
#include <string>

namespace ddp::trainer {

class MetricsFile {
 public:
  /// Opens `path` for appending, creating its folder (it usually sits beside the model on a fresh
  /// volume). An empty path is a disabled file: append() does nothing. ConfigError when it cannot
  /// be opened, naming `flag`, the path and the reason.
  explicit MetricsFile(std::string path, std::string flag = "--metrics-file");
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  bool enabled() const { return file_ != nullptr; }
  /// One serialised JSON object as one line. DataError when the write fails (disk full, ...).
  void append(const std::string& json_object);

 private:
  std::string path_;
  std::string flag_;
  FILE* file_ = nullptr;
};

/// A finite number as %.6g; NaN and infinities become null.
std::string json_number(double v);

}  // namespace ddp::trainer

#include "trainer/metrics_file.h"

#include <ddp/errors.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <utility>

#include "util/files.h"

namespace ddp::trainer {

MetricsFile::MetricsFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  if (path_.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  try {
    if (!parent.empty()) util::make_dirs(parent.string());
  } catch (const DataError& e) {  // a bad flag value: ConfigError, as for a file that cannot be opened
    throw ConfigError(flag_ + " '" + path_ + "': " + e.what());
  }
  file_ = std::fopen(path_.c_str(), "a");
  if (!file_) throw ConfigError(flag_ + " '" + path_ + "' cannot be opened for appending: " + std::strerror(errno));
}

MetricsFile::~MetricsFile() {
  if (file_) std::fclose(file_);
}

void MetricsFile::append(const std::string& json_object) {
  if (!file_) return;
  std::fputs(json_object.c_str(), file_);
  std::fputc('\n', file_);
  if (std::fflush(file_) != 0) throw DataError("cannot append to " + flag_ + " '" + path_ + "': " + std::strerror(errno));
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace ddp::trainer

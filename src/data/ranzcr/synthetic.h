#pragma once
// A synthetic RANZCR CLiP dataset in the real layout, for tests, demos and benchmarks:
//   <dir>/train.csv, <dir>/train/<uid>.jpg, and with test_images > 0 <dir>/test/<uid>.jpg plus
//   <dir>/test_labels.csv (train.csv's format, to score predictions).
// The labels are visible: label column c draws a bright pattern in its own cell of a 4x3 grid, with
// its own orientation (c % 4 * 45 degrees) and style (solid, dashed, double line by c / 4), on a
// noisy chest-like background. A small CNN learns them in a few epochs.
//
//   ddp::data::ranzcr::write_synthetic_dataset(ddp::data::ranzcr::SyntheticOptions().dir("/tmp/rz").images(400).size(64));

#include <cstdint>
#include <string>

namespace ddp::data::ranzcr {

struct SyntheticOptions {
  SyntheticOptions& dir(std::string v) { dir_ = std::move(v); return *this; }
  /// Training images (rows of train.csv).
  SyntheticOptions& images(int64_t v) { images_ = v; return *this; }
  SyntheticOptions& test_images(int64_t v) { test_images_ = v; return *this; }
  /// Square images of size x size pixels (the real ones are ~2500x2048).
  SyntheticOptions& size(int v) { size_ = v; return *this; }
  /// Distinct PatientIDs (0: images / 3, at least 1).
  SyntheticOptions& patients(int64_t v) { patients_ = v; return *this; }
  SyntheticOptions& seed(uint64_t v) { seed_ = v; return *this; }
  SyntheticOptions& jpeg_quality(int v) { jpeg_quality_ = v; return *this; }
  /// Encoding threads (0: all cores).
  SyntheticOptions& threads(int v) { threads_ = v; return *this; }

  const std::string& dir() const { return dir_; }
  int64_t images() const { return images_; }
  int64_t test_images() const { return test_images_; }
  int size() const { return size_; }
  int64_t patients() const { return patients_; }
  uint64_t seed() const { return seed_; }
  int jpeg_quality() const { return jpeg_quality_; }
  int threads() const { return threads_; }

 private:
  std::string dir_;
  int64_t images_ = 200;
  int64_t test_images_ = 0;
  int size_ = 256;
  int64_t patients_ = 0;
  uint64_t seed_ = 0;
  int jpeg_quality_ = 90;
  int threads_ = 0;
};

/// Writes the dataset; ConfigError on bad options, DataError when a file cannot be written.
void write_synthetic_dataset(const SyntheticOptions& options);

}  // namespace ddp::data::ranzcr

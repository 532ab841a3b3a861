#pragma once
// A synthetic RANZCR CLiP dataset in the real layout, for tests, demos and benchmarks:
//   <dir>/train.csv, <dir>/train/<uid>.jpg, and with test_images > 0 <dir>/test/<uid>.jpg plus
//   <dir>/test_labels.csv (train.csv's format, to score predictions).
// The labels are visible: label column c draws a bright pattern in its own cell of a 4x3 grid, with
// its own orientation (c % 4 * 45 degrees) and style (solid, dashed, double line by c / 4), on a
// noisy chest-like background. A small CNN learns them in a few epochs.
//
//   ddp::data::ranzcr::write_synthetic_dataset(ddp::data::ranzcr::SyntheticOptions().dir("/tmp/rz").images(400).size(64));

#include <torch/arg.h>
#include <cstdint>
#include <string>

namespace ddp::data::ranzcr {

struct SyntheticOptions {
  TORCH_ARG(std::string, dir);
  /// Training images (rows of train.csv).
  TORCH_ARG(int64_t, images) = 200;
  TORCH_ARG(int64_t, test_images) = 0;
  /// Square images of size x size pixels (the real ones are ~2500x2048).
  TORCH_ARG(int, size) = 256;
  /// Distinct PatientIDs (0: images / 3, at least 1).
  TORCH_ARG(int64_t, patients) = 0;
  TORCH_ARG(uint64_t, seed) = 0;
  TORCH_ARG(int, jpeg_quality) = 90;
  /// Encoding threads (0: all cores).
  TORCH_ARG(int, threads) = 0;
};

/// Writes the dataset; ConfigError on bad options, DataError when a file cannot be written.
void write_synthetic_dataset(const SyntheticOptions& options);

}  // namespace ddp::data::ranzcr

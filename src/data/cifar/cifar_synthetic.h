#pragma once
// A learnable stand-in for CIFAR-10, written in the published layouts (what tools/
// make_cifar10_synthetic does). Each class has its own colour and stripe pattern (horizontal
// stripes for classes 0-4, vertical for 5-9, a class-specific frequency, random phase and
// brightness) plus Gaussian noise, so the seed's small CNN reaches >= 90% within a couple of epochs
// while the data still exercise every reader, augmentation and the whole training loop.
//
//   write_synthetic_cifar10(SyntheticCifarOptions().out_dir("/tmp/c10").train(10000).test(2000));

#include <torch/arg.h>
#include <cstdint>
#include <string>
#include <vector>

#include "data/cifar/cifar_layout_writer.h"

namespace ddp::data::cifar {

struct SyntheticCifarOptions {
  TORCH_ARG(std::string, out_dir) = "";
  /// Training images; split evenly over data_batch_1..5, so a multiple of 5.
  TORCH_ARG(int64_t, train) = 50000;
  TORCH_ARG(int64_t, test) = 10000;
  TORCH_ARG(uint64_t, seed) = 0;
  /// Strength of the class signal in [0, 1]: colour and stripes are blended with grey by it (1:
  /// easy, >= 90% in two epochs; ~0.15: a harder task that still learns).
  TORCH_ARG(double, signal) = 1.0;
  /// Standard deviation of the per-pixel noise (0-255 scale).
  TORCH_ARG(double, noise) = 25.0;
  TORCH_ARG(bool, write_binary) = true;  ///< cifar-10-batches-bin/
  TORCH_ARG(bool, write_python) = true;  ///< cifar-10-batches-py/ (protocol-2 pickles)
};

/// The images of a split (0 = train, 1 = test), a pure function of its arguments.
CifarRecords generate_synthetic_split(uint64_t seed, int split, int64_t n, double signal = 1.0, double noise = 25.0);

/// Writes the requested layouts under out_dir (created if missing). ConfigError on bad options,
/// DataError when a file cannot be written.
void write_synthetic_cifar10(const SyntheticCifarOptions& options);

/// The real CIFAR-10 class names, in label order.
const std::vector<std::string>& cifar10_class_names();

}  // namespace ddp::data::cifar

#pragma once
// Batch assembly for CIFAR-10: uint8 images -> normalised float batches, with the seed's training
// augmentation (RandomCrop(32, padding=4) + RandomHorizontalFlip) applied per sample.
//
// A sample's crop offset and flip come from CounterRng(seed, epoch, dataset index): they depend only
// on which image it is and the epoch, not on the batch, the worker thread or the rank. So one process
// with batch 64 and two ranks with batch 32 see exactly the same augmented images.
//
//   CifarAugment aug = CifarAugment().seed(1);
//   assemble_cifar_batch(split, idx.data(), idx.size(), aug, epoch, images, labels);

#include <torch/arg.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/cifar/cifar_dataset.h"

namespace ddp::data::cifar {

/// The seed's normalisation: transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)).
extern const float kCifarMean[3];
extern const float kCifarStd[3];

struct CifarAugment {
  /// false: normalise only (the test set)
  TORCH_ARG(bool, enabled) = true;
  /// RandomCrop(32, padding); 0 disables the crop
  TORCH_ARG(int, padding) = 4;
  /// RandomHorizontalFlip(p=0.5)
  TORCH_ARG(bool, flip) = true;
  TORCH_ARG(uint64_t, seed) = 0;
};

/// The crop offsets (dy, dx in [-padding, padding]) and flip a sample gets in an epoch.
struct SampleAugmentation {
  int dy = 0, dx = 0;
  bool flip = false;
};
SampleAugmentation sample_augmentation(const CifarAugment& aug, int64_t epoch, int64_t dataset_index);

/// Writes images (float [n, 3, 32, 32], contiguous, CPU) and labels (int64 [n]) for the samples
/// `indices[0..n)` of `split`. Indices are checked against the split size (std::out_of_range).
void assemble_cifar_batch(const CifarSplit& split, const int64_t* indices, int64_t n, const CifarAugment& aug,
                          int64_t epoch, at::Tensor& images, at::Tensor& labels);

}  // namespace ddp::data::cifar

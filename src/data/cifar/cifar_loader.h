#pragma once
// Batches of one CIFAR-10 split for one rank: this rank's sample order in, normalised (and for
// training, augmented) batches out, assembled ahead of time on background threads and delivered on
// the target device.
//
//   CifarLoader loader(data.train, CifarLoaderOptions().batch_size(64).workers(1).device(device)
//                                      .augment(CifarAugment().seed(1)));
//   loader.start_epoch(epoch, sampler.indices());
//   while (auto batch = loader.next()) step(batch->images, batch->labels);
//
// What a batch holds depends only on (indices, epoch, seed), never on thread timing.

#include <torch/arg.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <vector>

#include "data/cifar/cifar_dataset.h"
#include "data/cifar/cifar_transforms.h"
#include "util/ordered_prefetcher.h"

namespace ddp::data::cifar {

struct CifarBatch {
  at::Tensor images;  ///< float [b, 3, 32, 32] on the loader's device
  at::Tensor labels;  ///< int64 [b] on the loader's device
  int64_t index = 0;  ///< batch number within the epoch
};

struct CifarLoaderOptions {
  TORCH_ARG(int64_t, batch_size) = 64;
  /// Background threads assembling batches; 0 assembles them inline in next().
  TORCH_ARG(int, workers) = 1;
  /// Ready batches kept ahead of the consumer.
  TORCH_ARG(int, prefetch) = 4;
  /// Drop a last batch smaller than batch_size (DataLoader's drop_last).
  TORCH_ARG(bool, drop_last) = false;
  TORCH_ARG(c10::Device, device) = c10::Device(c10::kCPU);
  TORCH_ARG(CifarAugment, augment) = CifarAugment().enabled(false);
};

class CifarLoader {
 public:
  CifarLoader(const CifarSplit& split, CifarLoaderOptions options);
  ~CifarLoader();

  /// Begins an epoch over `indices` (this rank's samples, in order), skipping the first
  /// `first_batch` batches (resuming mid-epoch). Any unfinished epoch is abandoned.
  void start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t first_batch = 0);
  /// The next batch of the current epoch, or nullopt at its end.
  std::optional<CifarBatch> next();

  /// Batches an epoch over `num_samples` samples yields (before skipping).
  int64_t batches_for(int64_t num_samples) const;
  const CifarLoaderOptions& options() const { return options_; }

 private:
  struct HostBatch {
    at::Tensor images, labels;
    int64_t index;
  };
  HostBatch make_host_batch(int64_t batch) const;

  const CifarSplit& split_;
  CifarLoaderOptions options_;
  int64_t epoch_ = 0;
  int64_t first_batch_ = 0;
  std::vector<int64_t> indices_;
  std::unique_ptr<util::OrderedPrefetcher<HostBatch>> prefetcher_;
};

}  // namespace ddp::data::cifar

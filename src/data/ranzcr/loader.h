#pragma once
// Batches of RANZCR images decoded, resized, augmented and normalised on a pool of threads, a few
// batches ahead of the training loop, so neither the GPU nor the CPU waits for data.
//
//   auto data = std::make_shared<ddp::data::ranzcr::Dataset>(records, "data/train");
//   ddp::data::ranzcr::BatchLoader loader(data, ddp::data::ranzcr::LoaderOptions().batch_size(32)
//                                             .image_size(224).workers(4).augment(true));
//   loader.start_epoch(sampler.indices(), epoch);          // indices into data->records
//   ddp::data::ranzcr::Batch batch;
//   while (loader.next(&batch)) { model(batch.images) ... batch.targets ... }
//
// Samples are produced in order; sample i of epoch e is augmented with its own random stream
// (seed, e, index), so results do not depend on the number of threads or their timing.
// With workers() >= 1 the loader sets OpenCV's own thread count to 1: parallelism comes from the
// pool, one image per thread.

#include "data/ranzcr/image.h"
#include "data/ranzcr/records.h"

#include <torch/arg.h>
#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/ordered_prefetcher.h"

namespace ddp::data::ranzcr {

class ImageCache;

/// Records and the folder their images are in.
struct Dataset {
  Dataset(std::vector<Record> records, std::string image_dir)
      : records(std::move(records)), image_dir(std::move(image_dir)) {}
  std::string image_path(int64_t i) const { return image_dir + "/" + records[i].file_name; }

  std::vector<Record> records;
  std::string image_dir;
};

/// Checks that every image of `dataset` exists (a stat, no decode). Missing ones are a DataError
/// naming the first uids and the count; with `skip_missing` they are dropped from the records with
/// a warning instead. Returns how many were dropped.
int64_t check_images_exist(Dataset& dataset, bool skip_missing);

struct LoaderOptions {
  TORCH_ARG(int64_t, batch_size) = 32;
  TORCH_ARG(int, image_size) = 224;
  /// Decoding threads (0: decode on the calling thread inside next(), no prefetch).
  TORCH_ARG(int, workers) = 2;
  /// Batches prepared ahead of the one being consumed.
  TORCH_ARG(int, prefetch_batches) = 4;
  TORCH_ARG(bool, augment) = false;
  TORCH_ARG(AugmentOptions, augment_options);
  TORCH_ARG(uint64_t, seed) = 0;
  /// An undecodable image becomes a zero image with valid = 0 (and a warning) instead of an error.
  TORCH_ARG(bool, skip_bad_images) = false;
  /// Folder of resized images (ImageCache); empty: decode every time.
  TORCH_ARG(std::string, cache_dir);
  /// Allocate batches in page-locked memory (CUDA builds only) for asynchronous copies.
  TORCH_ARG(bool, pin_memory) = false;
  TORCH_ARG(bool, drop_last) = false;
};

struct Batch {
  at::Tensor images;             ///< [B, 1, S, S] float32, normalised
  at::Tensor targets;            ///< [B, 11] float32
  std::vector<int64_t> indices;  ///< record index of each row
  std::vector<uint8_t> valid;    ///< 0: the image could not be decoded (skip_bad_images), zeros
  int64_t num_valid = 0;
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// Begins an epoch over `indices` (record indices, in order); abandons what is left of the
  /// previous one. `epoch` selects the augmentation streams.
  void start_epoch(std::vector<int64_t> indices, uint64_t epoch);
  /// The next batch of the epoch; false when the epoch is done. Rethrows a worker's DataError.
  bool next(Batch* batch);

  int64_t batches_in_epoch() const;
  /// Undecodable images replaced so far (skip_bad_images).
  int64_t bad_images() const { return bad_images_.load(); }
  /// Seconds next() spent waiting for data since construction (0 when the pool keeps up).
  double wait_seconds() const;
  const ImageCache* cache() const { return cache_.get(); }
  const LoaderOptions& options() const { return options_; }

 private:
  struct Slot;  // one batch, its rows filled by the workers
  std::shared_ptr<Slot> slot_for(int64_t batch);
  std::shared_ptr<Slot> produce_sample(int64_t position);
  void fill_sample(Slot& slot, int64_t row, int64_t index, uint64_t epoch);

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  std::unique_ptr<ImageCache> cache_;

  // This epoch; fixed while its samples are produced.
  std::vector<int64_t> indices_;
  uint64_t epoch_ = 0;
  int64_t total_ = 0;     // samples in this epoch (after drop_last)
  int64_t consumed_ = 0;  // batches handed to next()

  std::mutex slots_mutex_;
  std::map<int64_t, std::shared_ptr<Slot>> slots_;  // batches with rows being filled, by index
  std::atomic<int64_t> bad_images_{0};
  std::atomic<int64_t> wait_ns_{0};
  // The epoch's samples in order, a few batches ahead, one image per thread. Declared last: its
  // destructor joins the workers before the members they use go away.
  std::unique_ptr<util::OrderedPrefetcher<std::shared_ptr<Slot>>> samples_;
};

}  // namespace ddp::data::ranzcr

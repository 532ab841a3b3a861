#include "data/ranzcr/loader.h"

#include "data/ranzcr/image_cache.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/ATen.h>
#include <opencv2/core/utility.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <exception>

namespace ddp::data::ranzcr {

int64_t check_images_exist(Dataset& dataset, bool skip_missing) {
  std::vector<Record> kept;
  std::vector<std::string> missing;
  kept.reserve(dataset.records.size());
  for (size_t i = 0; i < dataset.records.size(); ++i) {
    struct stat st;
    const std::string path = dataset.image_path(static_cast<int64_t>(i));
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      kept.push_back(dataset.records[i]);
    } else {
      missing.push_back(dataset.records[i].uid);
    }
  }
  if (missing.empty()) return 0;
  std::string names;
  for (size_t i = 0; i < missing.size() && i < 5; ++i) names += (i ? ", " : "") + missing[i];
  if (missing.size() > 5) names += ", ...";
  const std::string what = std::to_string(missing.size()) + " of " + std::to_string(dataset.records.size()) +
                           " images missing in '" + dataset.image_dir + "' (uid " + names + ")";
  if (!skip_missing) throw ddp::DataError(what + "; --skip-bad-images trains without them");
  DDP_LOG(WARN) << what << "; skipped (--skip-bad-images)";
  dataset.records = std::move(kept);
  return static_cast<int64_t>(missing.size());
}

struct BatchLoader::Slot {
  Batch batch;
};

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  if (options_.batch_size() < 1) throw ddp::ConfigError("--batch-size must be >= 1, got " + std::to_string(options_.batch_size()));
  if (options_.image_size() < 8) throw ddp::ConfigError("--image-size must be >= 8, got " + std::to_string(options_.image_size()));
  if (options_.workers() < 0) throw ddp::ConfigError("--workers must be >= 0, got " + std::to_string(options_.workers()));
  if (options_.prefetch_batches() < 1) options_.prefetch_batches(1);
  if (!options_.cache_dir().empty()) cache_ = std::make_unique<ImageCache>(options_.cache_dir(), options_.image_size());
  if (options_.workers() > 0) cv::setNumThreads(1);
}

BatchLoader::~BatchLoader() = default;

int64_t BatchLoader::batches_in_epoch() const { return (total_ + options_.batch_size() - 1) / options_.batch_size(); }

double BatchLoader::wait_seconds() const { return static_cast<double>(wait_ns_.load()) * 1e-9; }

void BatchLoader::start_epoch(std::vector<int64_t> indices, uint64_t epoch) {
  for (int64_t i : indices) {
    if (i < 0 || i >= static_cast<int64_t>(dataset_->records.size())) {
      throw ddp::ConfigError("loader: index " + std::to_string(i) + " outside the dataset of " +
                             std::to_string(dataset_->records.size()) + " records");
    }
  }
  samples_.reset();  // abandons the previous epoch: its workers finish the image in hand and stop
  slots_.clear();
  indices_ = std::move(indices);
  epoch_ = epoch;
  total_ = static_cast<int64_t>(indices_.size());
  if (options_.drop_last()) total_ -= total_ % options_.batch_size();
  consumed_ = 0;
  // Sample j may start once the batch `prefetch_batches` before its own has been handed out.
  samples_ = std::make_unique<util::OrderedPrefetcher<std::shared_ptr<Slot>>>(
      total_, [this](int64_t position) { return produce_sample(position); },
      util::PrefetchOptions().workers(options_.workers()).capacity(
          static_cast<int>(options_.prefetch_batches() * options_.batch_size())));
}

std::shared_ptr<BatchLoader::Slot> BatchLoader::slot_for(int64_t batch) {
  std::lock_guard<std::mutex> lock(slots_mutex_);
  auto it = slots_.find(batch);
  if (it != slots_.end()) return it->second;
  const int64_t first = batch * options_.batch_size();
  const int64_t rows = std::min(options_.batch_size(), total_ - first);
  const int64_t s = options_.image_size();
  auto slot = std::make_shared<Slot>();
  auto opts = at::TensorOptions().dtype(at::kFloat);
  if (options_.pin_memory()) opts = opts.pinned_memory(true);
  slot->batch.images = at::empty({rows, 1, s, s}, opts);
  slot->batch.targets = at::empty({rows, kNumLabels}, opts);
  slot->batch.indices.assign(indices_.begin() + first, indices_.begin() + first + rows);
  slot->batch.valid.assign(static_cast<size_t>(rows), 1);
  slots_.emplace(batch, slot);
  return slot;
}

std::shared_ptr<BatchLoader::Slot> BatchLoader::produce_sample(int64_t position) {
  std::shared_ptr<Slot> slot = slot_for(position / options_.batch_size());
  fill_sample(*slot, position % options_.batch_size(), indices_[static_cast<size_t>(position)], epoch_);
  return slot;
}

void BatchLoader::fill_sample(Slot& slot, int64_t row, int64_t index, uint64_t epoch) {
  const int s = options_.image_size();
  float* out = slot.batch.images.data_ptr<float>() + row * s * s;
  std::memcpy(slot.batch.targets.data_ptr<float>() + row * kNumLabels, dataset_->records[index].labels.data(),
              sizeof(float) * kNumLabels);
  try {
    const std::string path = dataset_->image_path(index);
    cv::Mat img = cache_ ? cache_->load(dataset_->records[index].uid, path) : decode_resized(path, s);
    Rng rng = Rng::for_stream(options_.seed(), epoch, static_cast<uint64_t>(index));
    to_input(img, out, options_.augment() ? &options_.augment_options() : nullptr, &rng);
  } catch (const ddp::DataError& e) {
    if (!options_.skip_bad_images()) {
      throw ddp::DataError(std::string(e.what()) + " (uid " + dataset_->records[index].uid +
                           "; --skip-bad-images trains without it)");
    }
    ++bad_images_;
    DDP_LOG(WARN) << "skipping image of uid " << dataset_->records[index].uid << ": " << e.what();
    std::memset(out, 0, sizeof(float) * s * s);
    slot.batch.valid[static_cast<size_t>(row)] = 0;
  }
}

bool BatchLoader::next(Batch* batch) {
  if (!samples_ || consumed_ >= batches_in_epoch()) return false;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t rows = std::min(options_.batch_size(), total_ - consumed_ * options_.batch_size());
  // Every row of the batch is taken, so the next batch starts at its first row even when one failed;
  // the first failure is rethrown once the batch is complete.
  std::shared_ptr<Slot> slot;
  std::exception_ptr error;
  for (int64_t r = 0; r < rows; ++r) {
    try {
      slot = *samples_->next();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (options_.workers() > 0)
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(slots_mutex_);
    slots_.erase(consumed_);
  }
  ++consumed_;
  if (error) std::rethrow_exception(error);
  *batch = std::move(slot->batch);
  batch->num_valid = 0;
  for (uint8_t v : batch->valid) batch->num_valid += v;
  return true;
}

}  // namespace ddp::data::ranzcr

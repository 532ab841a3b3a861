#include "data/ranzcr/loader.h"

#include "data/ranzcr/image_cache.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/ATen.h>
#include <opencv2/core/utility.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstring>

namespace ddp::ranzcr {

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
  int64_t remaining = 0;
  std::exception_ptr error;
};

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  if (options_.batch_size() < 1) throw ddp::ConfigError("--batch-size must be >= 1, got " + std::to_string(options_.batch_size()));
  if (options_.image_size() < 8) throw ddp::ConfigError("--image-size must be >= 8, got " + std::to_string(options_.image_size()));
  if (options_.workers() < 0) throw ddp::ConfigError("--workers must be >= 0, got " + std::to_string(options_.workers()));
  if (options_.prefetch_batches() < 1) options_.prefetch_batches(1);
  if (!options_.cache_dir().empty()) cache_ = std::make_unique<ImageCache>(options_.cache_dir(), options_.image_size());
  if (options_.workers() > 0) {
    cv::setNumThreads(1);
    for (int i = 0; i < options_.workers(); ++i) threads_.emplace_back([this] { worker_loop(); });
  }
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int64_t BatchLoader::batches_in_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return (total_ + options_.batch_size() - 1) / options_.batch_size();
}

double BatchLoader::wait_seconds() const { return static_cast<double>(wait_ns_.load()) * 1e-9; }

void BatchLoader::start_epoch(std::vector<int64_t> indices, uint64_t epoch) {
  for (int64_t i : indices) {
    if (i < 0 || i >= static_cast<int64_t>(dataset_->records.size())) {
      throw ddp::ConfigError("loader: index " + std::to_string(i) + " outside the dataset of " +
                             std::to_string(dataset_->records.size()) + " records");
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  ++generation_;  // samples still being decoded for the old epoch are dropped when they finish
  done_cv_.wait(lock, [&] { return in_flight_ == 0; });
  slots_.clear();
  indices_ = std::move(indices);
  epoch_ = epoch;
  total_ = static_cast<int64_t>(indices_.size());
  if (options_.drop_last()) total_ -= total_ % options_.batch_size();
  next_job_ = 0;
  consumed_ = 0;
  lock.unlock();
  work_cv_.notify_all();
}

std::shared_ptr<BatchLoader::Slot> BatchLoader::slot_for_locked(int64_t batch) {
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
  slot->remaining = rows;
  slots_.emplace(batch, slot);
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

void BatchLoader::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] {
      return stop_ || (next_job_ < total_ && next_job_ / options_.batch_size() <
                                                 consumed_ + options_.prefetch_batches());
    });
    if (stop_) return;
    const int64_t job = next_job_++;
    const int64_t batch = job / options_.batch_size();
    const int64_t row = job % options_.batch_size();
    const uint64_t generation = generation_, epoch = epoch_;
    const int64_t index = indices_[job];
    std::shared_ptr<Slot> slot = slot_for_locked(batch);
    ++in_flight_;
    lock.unlock();
    std::exception_ptr error;
    try {
      fill_sample(*slot, row, index, epoch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    --in_flight_;
    if (generation == generation_) {
      if (error && !slot->error) slot->error = error;
      --slot->remaining;
    }
    done_cv_.notify_all();
  }
}

bool BatchLoader::next(Batch* batch) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  const int64_t batches = (total_ + options_.batch_size() - 1) / options_.batch_size();
  if (consumed_ >= batches) return false;
  const int64_t wanted = consumed_;
  std::shared_ptr<Slot> slot;
  if (threads_.empty()) {
    // No pool: decode this batch here.
    slot = slot_for_locked(wanted);
    const int64_t first = wanted * options_.batch_size();
    const uint64_t epoch = epoch_;
    lock.unlock();
    for (int64_t r = 0; r < static_cast<int64_t>(slot->batch.indices.size()); ++r) {
      fill_sample(*slot, r, slot->batch.indices[static_cast<size_t>(r)], epoch);
    }
    lock.lock();
    slot->remaining = 0;
    next_job_ = std::max(next_job_, first + static_cast<int64_t>(slot->batch.indices.size()));
  } else {
    done_cv_.wait(lock, [&] {
      auto it = slots_.find(wanted);
      return it != slots_.end() && it->second->remaining == 0;
    });
    slot = slots_.at(wanted);
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  }
  slots_.erase(wanted);
  ++consumed_;
  lock.unlock();
  work_cv_.notify_all();
  if (slot->error) std::rethrow_exception(slot->error);
  *batch = std::move(slot->batch);
  batch->num_valid = 0;
  for (uint8_t v : batch->valid) batch->num_valid += v;
  return true;
}

}  // namespace ddp::ranzcr

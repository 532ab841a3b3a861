#include "data/cifar/cifar_loader.h"

#include <ddp/errors.h>

#include <ATen/ATen.h>

#include "data/common/host_memory.h"

namespace ddp::data::cifar {

CifarLoader::CifarLoader(const CifarSplit& split, CifarLoaderOptions options) : split_(split), options_(options) {
  if (options_.batch_size() < 1) throw ConfigError("batch size must be >= 1, got " + std::to_string(options_.batch_size()));
  if (options_.workers() < 0) throw ConfigError("loader workers must be >= 0, got " + std::to_string(options_.workers()));
  if (options_.prefetch() < 1) throw ConfigError("prefetch depth must be >= 1, got " + std::to_string(options_.prefetch()));
}

CifarLoader::~CifarLoader() = default;

int64_t CifarLoader::batches_for(int64_t num_samples) const {
  const int64_t b = options_.batch_size();
  return options_.drop_last() ? num_samples / b : (num_samples + b - 1) / b;
}

void CifarLoader::start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t first_batch) {
  prefetcher_.reset();  // joins the previous epoch's workers before their inputs change
  epoch_ = epoch;
  indices_ = std::move(indices);
  const int64_t total = batches_for(static_cast<int64_t>(indices_.size()));
  first_batch_ = std::min(std::max<int64_t>(first_batch, 0), total);
  prefetcher_ = std::make_unique<util::OrderedPrefetcher<HostBatch>>(
      total - first_batch_, [this](int64_t i) { return make_host_batch(first_batch_ + i); },
      util::PrefetchOptions().workers(options_.workers()).capacity(options_.prefetch()));
}

CifarLoader::HostBatch CifarLoader::make_host_batch(int64_t batch) const {
  const int64_t b = options_.batch_size();
  const int64_t begin = batch * b;
  const int64_t n = std::min<int64_t>(b, static_cast<int64_t>(indices_.size()) - begin);
  HostBatch h;
  h.index = batch;
  h.images = empty_host_tensor({n, 3, 32, 32}, at::kFloat, options_.device());
  h.labels = empty_host_tensor({n}, at::kLong, options_.device());
  assemble_cifar_batch(split_, indices_.data() + begin, n, options_.augment(), epoch_, h.images, h.labels);
  return h;
}

std::optional<CifarBatch> CifarLoader::next() {
  if (!prefetcher_) return std::nullopt;
  auto h = prefetcher_->next();
  if (!h) return std::nullopt;
  CifarBatch batch;
  batch.index = h->index;
  batch.images = to_device(h->images, options_.device());
  batch.labels = to_device(h->labels, options_.device());
  return batch;
}

}  // namespace ddp::data::cifar

// DistributedSampler: Python's torch.utils.data.DistributedSampler, index for index.
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/core/Generator.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace ddp {

std::vector<int64_t> epoch_permutation(int64_t size, bool shuffle, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(size));
  if (!shuffle) {
    std::iota(order.begin(), order.end(), int64_t{0});
    return order;
  }
  // Python: g = torch.Generator(); g.manual_seed(seed); torch.randperm(size, generator=g).
  // A CPU generator constructed with a seed is in the same state as one reseeded with it.
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor perm = at::randperm(size, gen, at::TensorOptions().dtype(at::kLong));
  const int64_t* p = perm.data_ptr<int64_t>();
  std::copy(p, p + size, order.begin());
  return order;
}

DistributedSampler::DistributedSampler(int64_t size, int64_t num_replicas, int64_t rank,
                                       bool shuffle, int64_t seed, bool drop_last)
    : size_(size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  if (size < 0) throw ConfigError("DistributedSampler: dataset size " + std::to_string(size) + " is negative");
  if (num_replicas < 1)
    throw ConfigError("DistributedSampler: num_replicas " + std::to_string(num_replicas) +
                      " must be at least 1");
  if (rank < 0 || rank >= num_replicas)
    throw ConfigError("DistributedSampler: rank " + std::to_string(rank) + " is outside [0, " +
                      std::to_string(num_replicas) + ")");
  num_samples_ = samples_per_rank(size);
}

// Python: ceil((n - r) / r) with drop_last when r does not divide n (= floor(n / r)), else
// ceil(n / r); n is what is left of the order after the epoch offset.
int64_t DistributedSampler::samples_per_rank(int64_t n) const {
  return drop_last_ ? n / num_replicas_ : (n + num_replicas_ - 1) / num_replicas_;
}

void DistributedSampler::set_epoch(int64_t epoch) {
  if (epoch != epoch_) {
    start_index_ = 0;
    epoch_offset_ = 0;
    num_samples_ = samples_per_rank(size_);
  }
  epoch_ = epoch;
}

void DistributedSampler::set_epoch_offset(int64_t offset) {
  if (offset < 0 || offset > size_)
    throw ConfigError("DistributedSampler: epoch offset " + std::to_string(offset) + " is outside [0, " +
                      std::to_string(size_) + "] (the dataset's size)");
  epoch_offset_ = offset;
  start_index_ = 0;
  num_samples_ = samples_per_rank(size_ - offset);
}

int64_t DistributedSampler::consumed(int64_t offset, int64_t per_rank, int64_t world) const {
  if (offset < 0 || per_rank < 0 || world < 1)
    throw ConfigError("DistributedSampler::consumed: offset " + std::to_string(offset) + ", per_rank " +
                      std::to_string(per_rank) + ", world " + std::to_string(world) + " (need >= 0, >= 0, >= 1)");
  return std::min(size_, offset + per_rank * world);
}

void DistributedSampler::set_start_index(int64_t k) {
  if (k < 0 || k > num_samples_)
    throw ConfigError("DistributedSampler: start index " + std::to_string(k) + " is outside [0, " +
                      std::to_string(num_samples_) + "] (this rank's samples per epoch)");
  start_index_ = k;
}

void DistributedSampler::load_state(const State& state) {
  set_epoch(state.epoch);
  set_epoch_offset(state.epoch_offset);
  set_start_index(state.start_index);
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> out;
  if (num_samples_ == 0) return out;
  // Seeds wrap like Python's manual_seed does for negative values (two's complement).
  const uint64_t seed = static_cast<uint64_t>(seed_) + static_cast<uint64_t>(epoch_);
  const std::vector<int64_t> order = epoch_permutation(size_, shuffle_, seed);
  out.reserve(static_cast<size_t>(num_samples_ - start_index_));
  // Padding repeats the (rest of the) list from its start, so position p of the padded list is
  // order[offset + p % n]; with drop_last total_size() <= n and the modulo is a no-op.
  const int64_t n = size_ - epoch_offset_;
  for (int64_t j = start_index_; j < num_samples_; ++j)
    out.push_back(order[static_cast<size_t>(epoch_offset_ + (rank_ + j * num_replicas_) % n)]);
  return out;
}

}  // namespace ddp

#pragma once
// This rank's share of a dataset, index for index what Python's
// torch.utils.data.DistributedSampler yields for the same arguments.
//
//   ddp::DistributedSampler sampler(dataset_size, pg->size(), pg->rank(), /*shuffle=*/true, /*seed=*/0);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     sampler.set_epoch(epoch);
//     for (int64_t i : sampler.indices()) { ... }
//   }
//
// With shuffle the epoch's order is torch.randperm(size) drawn from a CPU generator seeded with
// seed + epoch (what Python does, bit for bit). Without drop_last the list is padded to a multiple
// of num_replicas by repeating it from the start (several times over when size < num_replicas);
// with drop_last the tail is cut instead. Rank r takes every num_replicas-th index from r on.
//
// Exact resume in the middle of an epoch: set_epoch(e), then set_start_index(k) skips the first k
// indices of this rank's list (the samples it already consumed). state()/load_state() carry both.
// The start index holds for the current epoch only: set_epoch() with another epoch resets it to 0.
//
// Resume at another world size (an elastic job that lost or gained nodes): the ranks of a world of
// W that each consumed k indices consumed positions 0..k*W-1 of the epoch's order (padding sits at
// the end). set_epoch_offset(o) deals the rest of the order, from position o, to the current ranks
// the same way (padded to their multiple, or cut with drop_last), so no sample of the epoch is
// trained twice or skipped; consumed() gives o. Offset 0 is Python's sampler exactly.
//
// For torch::data loaders see <ddp/distributed_sampler_adapter.h>.

#include <ddp/export.h>
#include <cstdint>
#include <vector>

namespace ddp {

class DDP_API DistributedSampler {
 public:
  /// Where this rank is in the dataset: enough to resume mid-epoch.
  struct State {
    int64_t epoch = 0;
    int64_t start_index = 0;
    int64_t epoch_offset = 0;
  };

  /// ConfigError when size < 0, num_replicas < 1 or rank is outside [0, num_replicas).
  DistributedSampler(int64_t size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     int64_t seed = 0, bool drop_last = false);

  /// Picks the epoch's permutation (seed + epoch). Resets the start index when the epoch changes.
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }

  /// Skips the first `k` indices of this rank's list this epoch (0 <= k <= num_samples()).
  void set_start_index(int64_t k);
  int64_t start_index() const { return start_index_; }

  /// Deals the epoch's order from position `offset` on (0 <= offset <= size()), as the rest of an
  /// epoch begun by a world of another size; resets the start index. set_epoch() with another epoch
  /// resets it to 0.
  void set_epoch_offset(int64_t offset);
  int64_t epoch_offset() const { return epoch_offset_; }
  /// Positions of the epoch's order done once each of `world` ranks consumed `per_rank` indices of
  /// a list dealt from `offset`: min(offset + per_rank * world, size()) — where a world of another
  /// size goes on (set_epoch_offset).
  int64_t consumed(int64_t offset, int64_t per_rank, int64_t world) const;

  State state() const { return {epoch_, start_index_, epoch_offset_}; }
  void load_state(const State& state);

  /// This rank's indices for the current epoch, from the start index on.
  std::vector<int64_t> indices() const;

  /// Length of this rank's full list per epoch (Python's len(sampler)); from the epoch offset on
  /// when there is one.
  int64_t num_samples() const { return num_samples_; }
  /// num_samples() * num_replicas(): the padded (or cut) length of the whole epoch (from the offset).
  int64_t total_size() const { return num_samples_ * num_replicas_; }
  /// Indices left this epoch: num_samples() - start_index().
  int64_t remaining() const { return num_samples_ - start_index_; }

  int64_t size() const { return size_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  bool shuffle() const { return shuffle_; }
  int64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }

 private:
  int64_t samples_per_rank(int64_t n) const;
  int64_t size_;
  int64_t num_replicas_;
  int64_t rank_;
  bool shuffle_;
  int64_t seed_;
  bool drop_last_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
  int64_t start_index_ = 0;
  int64_t epoch_offset_ = 0;
};

/// The whole epoch's order before padding and striding: randperm(size) seeded with `seed` when
/// shuffling, else 0..size-1. Exposed for tests and for samplers built on the same permutation.
DDP_API std::vector<int64_t> epoch_permutation(int64_t size, bool shuffle, uint64_t seed);

}  // namespace ddp

#pragma once
// Counter-based random numbers: a value is a pure function of (seed, stream, counter), so a
// sample's augmentation depends only on the seed, the epoch and the sample's index in the dataset,
// never on which thread, rank or batch processes it. This is what makes augmented training
// reproducible across worker counts and world sizes.
//
//   CounterRng rng(seed, /*stream=*/epoch, /*key=*/dataset_index);
//   int dx = rng.uniform_int(9);   // 0..8
//   bool flip = rng.bernoulli();

#include <cstdint>

#include "util/splitmix64.h"

namespace ddp::data {

/// A bijective, well-mixed 64-bit hash (the SplitMix64 output function).
inline uint64_t mix64(uint64_t x) { return util::splitmix64(x); }

/// Hash of three words; distinct inputs give independent-looking outputs.
inline uint64_t mix64(uint64_t a, uint64_t b, uint64_t c) { return mix64(mix64(mix64(a) ^ b) ^ c); }

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream, uint64_t key) : base_(mix64(seed, stream, key)) {}

  /// Next 64 random bits.
  uint64_t next() { return mix64(base_ + 0x632BE59BD9B4E019ull * ++counter_); }
  /// Uniform in [0, n) (n >= 1); the modulo bias is below 2^-50 for the small n we use.
  uint32_t uniform_int(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  bool bernoulli() { return (next() >> 63) != 0; }

 private:
  uint64_t base_;
  uint64_t counter_ = 0;
};

}  // namespace ddp::data

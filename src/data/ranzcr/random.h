#pragma once
// Portable deterministic randomness for splits and augmentation: the same seed gives the same
// split and the same augmented pixels on every platform and standard library (std::shuffle and the
// std:: distributions are implementation-defined, so we do not use them for anything recorded).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "util/splitmix64.h"

namespace ddp::data::ranzcr {

/// SplitMix64 (util/splitmix64.h) with the draws the pipeline needs.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  /// A generator for (seed, a, b): independent streams per epoch and sample, whatever the thread.
  static Rng for_stream(uint64_t seed, uint64_t a, uint64_t b = 0) {
    util::SplitMix64 g(seed ^ 0x6a09e667f3bcc909ULL);
    // Each step: one draw, then fold the draw and the stream word into the state.
    uint64_t draw = g.next();
    g = util::SplitMix64(g.state() ^ (draw + a * 0x9e3779b97f4a7c15ULL));
    draw = g.next();
    g = util::SplitMix64(g.state() ^ (draw + b * 0xbf58476d1ce4e5b9ULL));
    return Rng(g);
  }
  uint64_t next() { return gen_.next(); }
  /// Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-64 * n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  explicit Rng(util::SplitMix64 gen) : gen_(gen) {}
  util::SplitMix64 gen_;
};

}  // namespace ddp::data::ranzcr

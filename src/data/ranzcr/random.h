#pragma once
// Portable deterministic randomness for splits and augmentation: the same seed gives the same
// split and the same augmented pixels on every platform and standard library (std::shuffle and the
// std:: distributions are implementation-defined, so we do not use them for anything recorded).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ddp::ranzcr {

/// SplitMix64: a fast 64-bit generator with good statistical quality, trivially seedable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  /// A generator for (seed, a, b): independent streams per epoch and sample, whatever the thread.
  static Rng for_stream(uint64_t seed, uint64_t a, uint64_t b = 0) {
    Rng r(seed ^ 0x6a09e667f3bcc909ULL);
    r.state_ ^= r.next() + a * 0x9e3779b97f4a7c15ULL;
    r.state_ ^= r.next() + b * 0xbf58476d1ce4e5b9ULL;
    return r;
  }
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-64 * n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace ddp::ranzcr

#pragma once
// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit generator whose state advances by a fixed odd
// constant and whose output is a bijective mix of the state. Both the generator and its output
// function on their own (a fast, well-mixed 64-bit hash) are used: the data pipelines' random
// numbers must be the same on every platform and standard library, which std:: engines and
// distributions do not promise.
//
//   SplitMix64 g(seed);
//   uint64_t a = g.next(), b = g.next();
//   uint64_t h = splitmix64(key);   // == SplitMix64(key).next()
#include <cstdint>

namespace ddp::util {

/// The generator's increment: 2^64 divided by the golden ratio, made odd.
constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

/// The output for state `x`: a bijective, well-mixed hash of a 64-bit word.
constexpr uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + kSplitMix64Gamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(uint64_t state) : state_(state) {}
  /// Next 64 random bits.
  constexpr uint64_t next() {
    const uint64_t out = splitmix64(state_);
    state_ += kSplitMix64Gamma;
    return out;
  }
  constexpr uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace ddp::util

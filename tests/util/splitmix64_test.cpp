// The generators' sequences are recorded (dataset splits, augmentation, sampler order in tests), so
// they must stay bit for bit what they were: checked against the published SplitMix64 and against the
// two pipelines' generators as they were written before util/splitmix64.h.
#include <gtest/gtest.h>

#include <cstdint>

#include "data/common/counter_rng.h"
#include "data/ranzcr/random.h"
#include "util/splitmix64.h"

namespace {

// Vigna's reference splitmix64.c, seeded with 1234567: its first five outputs.
constexpr uint64_t kReference[] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                                   4593380528125082431ull, 16408922859458223821ull};

// The RANZCR generator as it was: state += gamma, then the mix.
struct OldRng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static OldRng for_stream(uint64_t seed, uint64_t a, uint64_t b) {
    OldRng r{seed ^ 0x6a09e667f3bcc909ULL};
    r.state ^= r.next() + a * 0x9e3779b97f4a7c15ULL;
    r.state ^= r.next() + b * 0xbf58476d1ce4e5b9ULL;
    return r;
  }
};

}  // namespace

TEST(SplitMix64, MatchesTheReferenceSequence) {
  ddp::util::SplitMix64 g(1234567);
  for (uint64_t expected : kReference) EXPECT_EQ(g.next(), expected);
  EXPECT_EQ(ddp::util::splitmix64(1234567), kReference[0]);
  static_assert(ddp::util::splitmix64(0) == 0xE220A8397B1DCDAFull, "constexpr, and the mix of 0");
}

TEST(SplitMix64, PipelineGeneratorsKeepTheirSequences) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xFFFFFFFFFFFFFFFFull}) {
    OldRng old{seed};
    ddp::data::ranzcr::Rng now(seed);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(now.next(), old.next()) << seed << " draw " << i;
    for (uint64_t a : {0ull, 3ull, 1000003ull}) {
      OldRng old_stream = OldRng::for_stream(seed, a, a * 7 + 1);
      auto stream = ddp::data::ranzcr::Rng::for_stream(seed, a, a * 7 + 1);
      for (int i = 0; i < 20; ++i) ASSERT_EQ(stream.next(), old_stream.next()) << seed << "/" << a << " draw " << i;
    }
    // CounterRng's hash is the generator's output for state x.
    EXPECT_EQ(ddp::data::mix64(seed), OldRng{seed}.next());
  }
}

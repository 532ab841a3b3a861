// ddp::DistributedSampler: parity with Python's torch.utils.data.DistributedSampler over a grid of
// arguments, plus the properties a trainer relies on (coverage, resume, validation).
#include <ddp/checkpoint.h>
#include <ddp/distributed_sampler.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "support/multiprocess.h"
#include "support/subprocess.h"

namespace {

using ddp::DistributedSampler;

TEST(DistributedSampler, MatchesPythonOverGrid) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-sampler");
  const std::string out = dir + "/grid.txt";
  ddp::testing::Subprocess py(
      {DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/sampler/python/dump_sampler_grid.py", out});
  ASSERT_EQ(py.wait(std::chrono::seconds(60)), 0) << py.output();

  std::ifstream in(out);
  ASSERT_TRUE(in) << out;
  std::string line;
  int cases = 0, with_padding = 0, small = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    ASSERT_NE(colon, std::string::npos) << line;
    std::istringstream head(line.substr(0, colon)), tail(line.substr(colon + 1));
    int64_t size, replicas, rank, shuffle, seed, epoch, drop_last;
    head >> size >> replicas >> rank >> shuffle >> seed >> epoch >> drop_last;
    std::vector<int64_t> expected;
    for (int64_t v; tail >> v;) expected.push_back(v);

    DistributedSampler s(size, replicas, rank, shuffle != 0, seed, drop_last != 0);
    s.set_epoch(epoch);
    ASSERT_EQ(s.indices(), expected) << "case: " << line.substr(0, colon);
    ASSERT_EQ(s.num_samples(), static_cast<int64_t>(expected.size()));
    ++cases;
    if (!drop_last && size % replicas != 0) ++with_padding;
    if (size > 0 && size < replicas) ++small;
  }
  // The grid covers padding and datasets smaller than the world, not just the easy cases.
  EXPECT_GT(cases, 4000);
  EXPECT_GT(with_padding, 500);
  EXPECT_GT(small, 100);
  std::filesystem::remove_all(dir);
}

TEST(DistributedSampler, RanksCoverTheDatasetWithPadding) {
  for (int64_t size : {1, 5, 10, 13}) {
    for (int64_t replicas : {1, 3, 4, 16}) {
      std::multiset<int64_t> seen;
      for (int64_t rank = 0; rank < replicas; ++rank) {
        DistributedSampler s(size, replicas, rank, true, 7);
        s.set_epoch(3);
        auto idx = s.indices();
        EXPECT_EQ(static_cast<int64_t>(idx.size()), (size + replicas - 1) / replicas);
        seen.insert(idx.begin(), idx.end());
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), ((size + replicas - 1) / replicas) * replicas);
      for (int64_t i = 0; i < size; ++i) EXPECT_GE(seen.count(i), 1u) << "index " << i << " missing";
    }
  }
}

TEST(DistributedSampler, EpochChangesOrderAndSeedIsReproducible) {
  DistributedSampler a(100, 2, 1, true, 5), b(100, 2, 1, true, 5);
  a.set_epoch(1);
  b.set_epoch(1);
  EXPECT_EQ(a.indices(), b.indices());
  b.set_epoch(2);
  EXPECT_NE(a.indices(), b.indices());
  DistributedSampler c(100, 2, 1, /*shuffle=*/false);
  c.set_epoch(9);
  for (int64_t j = 0; j < 50; ++j) EXPECT_EQ(c.indices()[j], 1 + 2 * j);
}

TEST(DistributedSampler, StartIndexSkipsConsumedSamples) {
  DistributedSampler s(103, 4, 2, true, 11);
  s.set_epoch(4);
  const auto full = s.indices();
  s.set_start_index(10);
  EXPECT_EQ(s.remaining(), s.num_samples() - 10);
  EXPECT_EQ(s.indices(), std::vector<int64_t>(full.begin() + 10, full.end()));
  s.set_epoch(4);  // same epoch: the start index stays
  EXPECT_EQ(s.start_index(), 10);

  DistributedSampler resumed(103, 4, 2, true, 11);
  resumed.load_state(s.state());
  EXPECT_EQ(resumed.epoch(), 4);
  EXPECT_EQ(resumed.indices(), std::vector<int64_t>(full.begin() + 10, full.end()));
  resumed.set_epoch(5);  // next epoch starts from the beginning
  EXPECT_EQ(resumed.start_index(), 0);
  EXPECT_EQ(static_cast<int64_t>(resumed.indices().size()), resumed.num_samples());

  s.set_start_index(s.num_samples());
  EXPECT_TRUE(s.indices().empty());
  EXPECT_THROW(s.set_start_index(s.num_samples() + 1), ddp::ConfigError);
  EXPECT_THROW(s.set_start_index(-1), ddp::ConfigError);
}

// An elastic job: an epoch begun by 3 ranks, continued by 2, finished by 4. Each world's ranks
// take what TrainingProgress::change_world_size and the epoch offset deal them. Every sample of the
// epoch is trained exactly once, except the padding of the segment that ends the epoch (what an
// uninterrupted run at 4 ranks pads too). Without the offset (each rank resuming at its own start
// index in the new world's list) samples are skipped and others repeated, and this fails.
TEST(DistributedSampler, AnEpochResumedAtOtherWorldSizesTrainsEverySampleOnce) {
  const int64_t size = 50, epoch = 1, seed = 3;
  const std::vector<int64_t> order = ddp::epoch_permutation(size, true, seed + epoch);
  std::map<int64_t, int> times;
  ddp::TrainingProgress progress;
  progress.epoch = epoch;
  // world size, samples each rank takes before the next change (-1: to the end of the epoch)
  const std::vector<std::pair<int64_t, int64_t>> segments = {{3, 7}, {2, 5}, {4, -1}};
  int64_t saved_world = 3;
  std::vector<int64_t> offsets;
  for (const auto& [world, take] : segments) {
    progress.change_world_size(saved_world, world, size);
    offsets.push_back(progress.epoch_offset);
    int64_t taken = 0;
    for (int64_t rank = 0; rank < world; ++rank) {
      DistributedSampler s(size, world, rank, true, seed);
      s.load_state({progress.epoch, progress.samples_in_epoch, progress.epoch_offset});
      auto mine = s.indices();
      if (take >= 0) mine.resize(static_cast<size_t>(take));
      for (int64_t i : mine) ++times[i];
      taken = static_cast<int64_t>(mine.size());
    }
    progress.samples_in_epoch += taken;
    saved_world = world;
  }
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 21, 31}));  // 3 x 7, then + 2 x 5
  EXPECT_EQ(static_cast<int64_t>(times.size()), size);  // none skipped
  std::vector<int64_t> twice;
  for (const auto& [i, n] : times) {
    EXPECT_LE(n, 2) << "sample " << i;
    if (n == 2) twice.push_back(i);
  }
  // The last 19 positions dealt to 4 ranks pad to 20 with the first of them.
  EXPECT_EQ(twice, std::vector<int64_t>{order[31]});

  // consumed() counts padding positions as done; an offset at the end leaves nothing.
  DistributedSampler padded(10, 4, 0, true, seed);
  EXPECT_EQ(padded.consumed(0, 3, 4), 10);
  padded.set_epoch_offset(10);
  EXPECT_TRUE(padded.indices().empty());
  EXPECT_THROW(padded.set_epoch_offset(11), ddp::ConfigError);
  EXPECT_THROW(progress.change_world_size(0, 2, size), ddp::ConfigError);
  // The same world size changes nothing (an exact resume stays index for index).
  ddp::TrainingProgress same;
  same.samples_in_epoch = 4;
  EXPECT_FALSE(same.change_world_size(2, 2, size));
  EXPECT_EQ(same.samples_in_epoch, 4);
  EXPECT_EQ(same.epoch_offset, 0);
  // A new epoch starts at offset 0 again.
  DistributedSampler next(size, 2, 1, true, seed);
  next.set_epoch(1);
  next.set_epoch_offset(21);
  next.set_epoch(2);
  EXPECT_EQ(next.epoch_offset(), 0);
  EXPECT_EQ(next.num_samples(), 25);
}

TEST(DistributedSampler, RejectsBadArguments) {
  EXPECT_THROW(DistributedSampler(-1, 2, 0), ddp::ConfigError);
  EXPECT_THROW(DistributedSampler(10, 0, 0), ddp::ConfigError);
  EXPECT_THROW(DistributedSampler(10, 2, 2), ddp::ConfigError);
  EXPECT_THROW(DistributedSampler(10, 2, -1), ddp::ConfigError);
  try {
    DistributedSampler(10, 4, 7);
    FAIL() << "expected ConfigError";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 7"), std::string::npos) << e.what();
  }
}

}  // namespace

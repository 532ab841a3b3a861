// The ZeRO partition: PyTorch's sorted-greedy assignment, worked by hand. (The test against torch's
// own partition on a real model is ZeroRedundancyOptimizer.MatchesPyTorchs in zero_test.cpp.)
#include <gtest/gtest.h>

#include "ddp/optim/zero_partition.h"

namespace {

using ddp::detail::zero_partition;

TEST(ZeroPartition, LargestFirstToTheLeastLoadedRankTiesToTheLowest) {
  // Sorted: 50 (#1), 30 (#2), 30 (#3), 10 (#0), 5 (#4). Loads: 50->r0 (50,0); 30->r1 (50,30);
  // 30->r1 (50,60); 10->r0 (60,60); 5: a tie, r0 (65,60).
  auto p = zero_partition({{10, 50, 30, 30, 5}}, 2);
  EXPECT_EQ(p.owner[0], (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(p.shard[0][0], (std::vector<size_t>{1, 0, 4}));  // in assignment order, largest first
  EXPECT_EQ(p.shard[0][1], (std::vector<size_t>{2, 3}));
}

TEST(ZeroPartition, LoadsCarryOverFromOneGroupToTheNext) {
  // Group 0 leaves r0 at 100; group 1's first parameter therefore goes to r1 and r2 first.
  auto p = zero_partition({{100}, {7, 7, 7}}, 3);
  EXPECT_EQ(p.owner[0], (std::vector<int>{0}));
  EXPECT_EQ(p.owner[1], (std::vector<int>{1, 2, 1}));
  EXPECT_TRUE(p.shard[1][0].empty());
}

TEST(ZeroPartition, MoreRanksThanParametersLeavesEmptyShards) {
  auto p = zero_partition({{4, 4}}, 4);
  EXPECT_EQ(p.owner[0], (std::vector<int>{0, 1}));
  EXPECT_TRUE(p.shard[0][2].empty());
  EXPECT_TRUE(p.shard[0][3].empty());
}

}  // namespace

// Bucket assignment rules (pure function, no processes).
#include <gtest/gtest.h>

#include "ddp/reducer/bucket_assignment.h"
#include <ddp/errors.h>

#include <cmath>

namespace {

using ddp::detail::assign_buckets;
using ddp::detail::BucketCaps;
using Buckets = std::vector<std::vector<size_t>>;

std::vector<size_t> reversed(size_t n) {
  std::vector<size_t> o;
  for (size_t i = n; i-- > 0;) o.push_back(i);
  return o;
}

TEST(BucketAssignment, FirstBucketSmallThenCapInGivenOrder) {
  // Six 400-byte tensors, first cap 500, later caps 1000: [5,4] then [3,2,1] (>= 1000 closes) then [0].
  std::vector<int> group(6, 0);
  std::vector<int64_t> bytes(6, 400);
  EXPECT_EQ(assign_buckets(reversed(6), group, bytes, BucketCaps{500, 1000}),
            (Buckets{{5, 4}, {3, 2, 1}, {0}}));
}

TEST(BucketAssignment, LargeTensorGetsItsOwnBucketAndZeroCapSplitsAll) {
  std::vector<int> group(3, 0);
  std::vector<int64_t> bytes = {10, 5000, 10};
  EXPECT_EQ(assign_buckets({0, 1, 2}, group, bytes, BucketCaps{100, 100}), (Buckets{{0, 1}, {2}}));
  EXPECT_EQ(assign_buckets({2, 1, 0}, group, bytes, BucketCaps{0, 0}), (Buckets{{2}, {1}, {0}}));
  EXPECT_EQ(assign_buckets({2, 1, 0}, group, bytes, BucketCaps{1 << 30, 1 << 30}), (Buckets{{2, 1, 0}}));
}

TEST(BucketAssignment, SeparateBucketsPerDeviceAndDtypeOrderedByFirstTensor) {
  // Groups alternate (e.g. float / half); each group has its own caps and buckets.
  std::vector<int> group = {0, 1, 0, 1, 0};
  std::vector<int64_t> bytes(5, 100);
  EXPECT_EQ(assign_buckets({4, 3, 2, 1, 0}, group, bytes, BucketCaps{150, 1000}),
            (Buckets{{4, 2}, {3, 1}, {0}}));
}

TEST(BucketAssignment, ArrivalOrderIsKept) {
  std::vector<int> group(4, 0);
  std::vector<int64_t> bytes(4, 100);
  EXPECT_EQ(assign_buckets({1, 3, 0, 2}, group, bytes, BucketCaps{200, 200}), (Buckets{{1, 3}, {0, 2}}));
}

TEST(BucketAssignment, CapsInMiB) {
  EXPECT_EQ(ddp::detail::mib_to_bytes(1.0, "x"), 1 << 20);
  EXPECT_EQ(ddp::detail::mib_to_bytes(0.001, "x"), 1048);
  EXPECT_THROW(ddp::detail::mib_to_bytes(-1, "bucket_cap_mb"), ddp::ConfigError);
  EXPECT_THROW(ddp::detail::mib_to_bytes(std::nan(""), "bucket_cap_mb"), ddp::ConfigError);
}

}  // namespace

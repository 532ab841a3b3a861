// The CIFAR loader (built on util/ordered_prefetcher.h, tested in tests/util).
#include <ATen/ATen.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "data/cifar/cifar_loader.h"

namespace {

ddp::data::cifar::CifarSplit split(int64_t n) {
  at::manual_seed(1);
  ddp::data::cifar::CifarSplit s;
  s.images = at::randint(0, 256, {n, 3, 32, 32}, at::kByte);
  s.labels = at::arange(n, at::kLong).remainder(10);
  return s;
}

std::vector<at::Tensor> epoch_batches(ddp::data::cifar::CifarLoader& loader, int64_t epoch, const std::vector<int64_t>& idx,
                                      int64_t first = 0) {
  std::vector<at::Tensor> out;
  loader.start_epoch(epoch, idx, first);
  while (auto b = loader.next()) {
    out.push_back(b->images);
    out.push_back(b->labels);
  }
  return out;
}

}  // namespace

TEST(CifarLoader, SameBatchesForAnyWorkerCountAndResumable) {
  auto s = split(103);
  std::vector<int64_t> idx(103);
  for (int64_t i = 0; i < 103; ++i) idx[i] = (i * 37) % 103;
  using ddp::data::cifar::CifarLoaderOptions;
  auto opts = CifarLoaderOptions().batch_size(10).augment(ddp::data::cifar::CifarAugment().seed(9));
  ddp::data::cifar::CifarLoader inline_loader(s, opts.workers(0));
  ddp::data::cifar::CifarLoader threaded(s, CifarLoaderOptions(opts).workers(3).prefetch(2));
  auto a = epoch_batches(inline_loader, 1, idx);
  auto b = epoch_batches(threaded, 1, idx);
  ASSERT_EQ(a.size(), 22u);  // 11 batches (the last holds 3), images + labels each
  EXPECT_EQ(a[20].size(0), 3);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << i;
  // Another epoch augments differently; labels follow the indices.
  auto c = epoch_batches(threaded, 2, idx);
  EXPECT_FALSE(at::equal(a[0], c[0]));
  EXPECT_TRUE(at::equal(a[1], c[1]));
  EXPECT_EQ(a[1][1].item<int64_t>(), idx[1] % 10);
  // Resuming at batch 7 yields exactly the tail.
  auto tail = epoch_batches(threaded, 1, idx, 7);
  ASSERT_EQ(tail.size(), 8u);
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_TRUE(at::equal(tail[i], a[14 + i]));
  // drop_last drops the short batch.
  ddp::data::cifar::CifarLoader dropping(s, CifarLoaderOptions(opts).drop_last(true));
  EXPECT_EQ(epoch_batches(dropping, 1, idx).size(), 20u);
}

TEST(CifarLoader, BadOptionsAreConfigErrors) {
  auto s = split(4);
  EXPECT_THROW(ddp::data::cifar::CifarLoader(s, ddp::data::cifar::CifarLoaderOptions().batch_size(0)), ddp::ConfigError);
  EXPECT_THROW(ddp::data::cifar::CifarLoader(s, ddp::data::cifar::CifarLoaderOptions().workers(-1)), ddp::ConfigError);
}

// The ordered prefetcher (order, bound, errors) and the CIFAR loader built on it.
#include <ATen/ATen.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "data/cifar/cifar_loader.h"
#include "data/common/counter_rng.h"
#include "data/common/ordered_prefetcher.h"

using ddp::data::OrderedPrefetcher;
using ddp::data::PrefetchOptions;

TEST(OrderedPrefetcher, DeliversInOrderWhateverTheTiming) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    OrderedPrefetcher<int64_t> p(
        40,
        [](int64_t i) {
          // Later batches often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds(ddp::data::mix64(i) % 2000));
          return i * i;
        },
        PrefetchOptions().workers(workers).capacity(5));
    for (int64_t i = 0; i < 40; ++i) {
      auto v = p.next();
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(*v, i * i);
    }
    EXPECT_FALSE(p.next().has_value());
  }
}

TEST(OrderedPrefetcher, StaysWithinCapacity) {
  std::atomic<int64_t> consumed{0}, worst_lead{0};
  OrderedPrefetcher<int> p(
      30,
      [&](int64_t i) {
        int64_t lead = i - consumed.load();
        int64_t w = worst_lead.load();
        while (lead > w && !worst_lead.compare_exchange_weak(w, lead)) {
        }
        return static_cast<int>(i);
      },
      PrefetchOptions().workers(4).capacity(3));
  while (auto v = p.next()) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // a slow consumer
    consumed = *v + 1;
  }
  // Batch i may start once batch i - capacity has been handed out.
  EXPECT_LE(worst_lead.load(), 3);
  EXPECT_GE(worst_lead.load(), 1);
}

TEST(OrderedPrefetcher, ProducerErrorSurfacesAtItsBatch) {
  OrderedPrefetcher<int> p(
      10,
      [](int64_t i) {
        if (i == 4) throw std::runtime_error("batch 4 is broken");
        return static_cast<int>(i);
      },
      PrefetchOptions().workers(2).capacity(4));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*p.next(), i);
  EXPECT_THROW(p.next(), std::runtime_error);
}

TEST(OrderedPrefetcher, AbandonedEarlyShutsDownCleanly) {
  OrderedPrefetcher<int> p(1000, [](int64_t i) { return static_cast<int>(i); }, PrefetchOptions().workers(3));
  EXPECT_EQ(*p.next(), 0);
}  // destructor joins the workers

namespace {

ddp::data::CifarSplit split(int64_t n) {
  at::manual_seed(1);
  ddp::data::CifarSplit s;
  s.images = at::randint(0, 256, {n, 3, 32, 32}, at::kByte);
  s.labels = at::arange(n, at::kLong).remainder(10);
  return s;
}

std::vector<at::Tensor> epoch_batches(ddp::data::CifarLoader& loader, int64_t epoch, const std::vector<int64_t>& idx,
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
  using ddp::data::CifarLoaderOptions;
  auto opts = CifarLoaderOptions().batch_size(10).augment(ddp::data::CifarAugment().seed(9));
  ddp::data::CifarLoader inline_loader(s, opts.workers(0));
  ddp::data::CifarLoader threaded(s, CifarLoaderOptions(opts).workers(3).prefetch(2));
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
  ddp::data::CifarLoader dropping(s, CifarLoaderOptions(opts).drop_last(true));
  EXPECT_EQ(epoch_batches(dropping, 1, idx).size(), 20u);
}

TEST(CifarLoader, BadOptionsAreConfigErrors) {
  auto s = split(4);
  EXPECT_THROW(ddp::data::CifarLoader(s, ddp::data::CifarLoaderOptions().batch_size(0)), ddp::ConfigError);
  EXPECT_THROW(ddp::data::CifarLoader(s, ddp::data::CifarLoaderOptions().workers(-1)), ddp::ConfigError);
}

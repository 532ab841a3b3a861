// The ordered prefetcher: order whatever the timing, the bound on work ahead, errors at their item,
// clean shutdown when abandoned.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "util/ordered_prefetcher.h"
#include "util/splitmix64.h"

using ddp::util::OrderedPrefetcher;
using ddp::util::PrefetchOptions;

TEST(OrderedPrefetcher, DeliversInOrderWhateverTheTiming) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    OrderedPrefetcher<int64_t> p(
        40,
        [](int64_t i) {
          // Later batches often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds(ddp::util::splitmix64(static_cast<uint64_t>(i)) % 2000));
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


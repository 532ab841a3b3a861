// The trainers' --comm-hook value and the bucket layout a PowerSGD checkpoint carries
// (src/trainer/comm_hook_setting.h, comm_hook_choice.h). In-process.
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/comm_hook_choice.h"
#include "trainer/comm_hook_setting.h"

namespace {

using ddp::trainer::bucket_layout_from;
using ddp::trainer::bucket_layout_tensor;
using ddp::trainer::parse_comm_hook;

TEST(CommHookSetting, ReadsEveryKindAndNamesTheFlagOfABadValue) {
  EXPECT_EQ(parse_comm_hook("none", "1000").kind, "none");
  EXPECT_EQ(parse_comm_hook("fp16", "1000").describe(), "fp16");
  const auto p = parse_comm_hook("powersgd:4", "20");
  EXPECT_EQ(p.kind, "powersgd");
  EXPECT_EQ(p.powersgd_rank, 4);
  EXPECT_EQ(p.powersgd_start_iter, 20);
  EXPECT_EQ(p.describe(), "powersgd:4 (from step 20)");
  for (const std::string bad : {"", "powersgd", "powersgd:", "powersgd:0", "powersgd:x", "PowerSGD:2", "fp32"}) {
    try {
      parse_comm_hook(bad, "1000");
      ADD_FAILURE() << "accepted --comm-hook '" << bad << "'";
    } catch (const ddp::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--comm-hook"), std::string::npos) << e.what();
    }
  }
  // start_powerSGD_iter must exceed 1 (the buckets are rebuilt after step 1).
  EXPECT_THROW(parse_comm_hook("powersgd:2", "1"), ddp::ConfigError);
}

TEST(BucketLayout, RoundTripsAndRefusesWhatIsNotALayout) {
  const std::vector<std::vector<int64_t>> layout = {{5, 4}, {3}, {2, 1, 0}};
  EXPECT_EQ(bucket_layout_from(bucket_layout_tensor(layout)), layout);
  EXPECT_EQ(bucket_layout_from(bucket_layout_tensor({})), std::vector<std::vector<int64_t>>{});
  const std::vector<at::Tensor> bad = {
      torch::tensor(std::vector<int64_t>{}),             // empty
      torch::tensor(std::vector<float>{1, 1, 0}),          // not int64
      torch::tensor(std::vector<int64_t>{-1}),             // negative count
      torch::tensor(std::vector<int64_t>{3, 1}),           // more buckets than sizes
      torch::tensor(std::vector<int64_t>{1, 5, 0}),        // a size past the end
      torch::tensor(std::vector<int64_t>{1, -2, 0, 0}),    // a negative size
      torch::tensor(std::vector<int64_t>{1, 1, 0, 7}),     // entries left over
      torch::zeros({2, 2}, torch::kLong),                  // not flat
  };
  for (const auto& t : bad) EXPECT_THROW(bucket_layout_from(t), ddp::DataError) << t;
}

}  // namespace

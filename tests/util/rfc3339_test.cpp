// The timestamps every stamped line starts with, and the recogniser ddprun uses to keep a leading
// timestamp first: it must accept what Go's time.Parse(time.RFC3339Nano, ...) accepts (Katib's
// collector, pkg/metricscollector/v1beta1/file-metricscollector) and nothing that is not one word.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "util/rfc3339.h"

using ddp::util::leading_rfc3339;

namespace {
size_t lead(const std::string& s) { return leading_rfc3339(s.data(), s.size()); }
}  // namespace

TEST(Rfc3339, FormatsUtcWithMilliseconds) {
  timespec t{};
  t.tv_sec = 1764631000;  // 2025-12-01T23:16:40Z
  t.tv_nsec = 7'999'999;
  EXPECT_EQ(ddp::util::rfc3339_utc(t), "2025-12-01T23:16:40.007Z");
  t.tv_sec = 0;
  t.tv_nsec = 0;
  EXPECT_EQ(ddp::util::rfc3339_utc(t), "1970-01-01T00:00:00.000Z");
  const std::string now = ddp::util::rfc3339_now();
  EXPECT_TRUE(std::regex_match(now, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))) << now;
  EXPECT_EQ(lead(now + " x"), now.size() + 1);
}

TEST(Rfc3339, RecognisesTheTimestampsGoParsesFollowedByASpace) {
  EXPECT_EQ(lead("2026-12-01T23:16:11.123Z epoch=1"), 25u);
  EXPECT_EQ(lead("2026-12-01T23:16:11Z epoch=1"), 21u);                   // no fraction
  EXPECT_EQ(lead("2026-12-01T23:16:11.123456789Z x"), 31u);               // nanoseconds
  EXPECT_EQ(lead("2026-12-01T23:16:11.1+05:30 x"), 28u);                  // offset
  EXPECT_EQ(lead("2024-02-29T00:00:00-00:00 x"), 26u);                    // leap day
  EXPECT_EQ(lead("2026-12-01T23:16:11.123Z"), 0u) << "no space: the whole line, no rest to prefix";
  EXPECT_EQ(lead("2026-12-01T23:16:11.1234567890Z x"), 0u) << "10 digits of fraction";
  EXPECT_EQ(lead("2026-12-01T23:16:11.Z x"), 0u);
  EXPECT_EQ(lead("2026-12-01 23:16:11.123Z x"), 0u);
  EXPECT_EQ(lead("2026-12-01t23:16:11.123Z x"), 0u);
  EXPECT_EQ(lead("2026-13-01T23:16:11Z x"), 0u);
  EXPECT_EQ(lead("2023-02-29T23:16:11Z x"), 0u) << "not a leap year";
  EXPECT_EQ(lead("2026-12-01T24:00:00Z x"), 0u);
  EXPECT_EQ(lead("2026-12-01T23:60:00Z x"), 0u);
  EXPECT_EQ(lead("2026-12-01T23:16:60Z x"), 0u);
  EXPECT_EQ(lead("2026-12-01T23:16:11+0530 x"), 0u);
  EXPECT_EQ(lead("2026-12-01T23:16:11+24:00 x"), 0u);
  EXPECT_EQ(lead("2026-12-01T23:16:11 x"), 0u) << "no zone";
  EXPECT_EQ(lead("[0]: 2026-12-01T23:16:11Z x"), 0u);
  EXPECT_EQ(lead(""), 0u);
  EXPECT_EQ(leading_rfc3339("2026-12-01T23:16:11.123Z x", 19), 0u) << "reads no byte past size";
}

// The shape of a log line: UTC timestamp with milliseconds, [ddp] or [ddp rank N], level, message.
#include <ddp/logging.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace {

std::string logged(ddp::LogLevel level, const std::string& message) {
  ::testing::internal::CaptureStderr();
  ddp::log_line(level, message);
  return ::testing::internal::GetCapturedStderr();
}

}  // namespace

TEST(Logging, LineHasAMillisecondUtcTimestamp) {
  ddp::set_log_rank(-1);
  const std::string line = logged(ddp::LogLevel::kInfo, "hello");
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[ddp\] INFO  hello\n)")))
      << line;
}

TEST(Logging, LineCarriesTheRankOnceKnown) {
  ddp::set_log_rank(3);
  const std::string line = logged(ddp::LogLevel::kWarn, "careful");
  ddp::set_log_rank(-1);
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[ddp rank 3\] WARN  careful\n)")))
      << line;
}

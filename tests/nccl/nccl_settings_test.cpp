// The NCCL group's environment switches under our names and c10d's (src/ddp/nccl/settings.h):
// pure functions, tested with or without NCCL.
#include <ddp/errors.h>
#include <ddp/logging.h>
#include <gtest/gtest.h>

#include <string>

#include "ddp/nccl/settings.h"

using Env = ddp::util::EnvMap;
using ddp::nccl_backend::blocking_wait_from_env;
using ddp::nccl_backend::record_streams_from_env;

namespace {

// What resolving `env` logged (stderr), with warnings enabled.
template <typename F>
std::string stderr_of(F&& resolve) {
  ddp::set_log_level(ddp::LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  resolve();
  return ::testing::internal::GetCapturedStderr();
}

void expect_config_error(const Env& env, const std::string& fragment) {
  try {
    blocking_wait_from_env(env);
    record_streams_from_env(env);
    FAIL() << "expected a ConfigError naming " << fragment;
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(NcclSettings, NothingSetLeavesTheDefaults) {
  EXPECT_FALSE(blocking_wait_from_env({}).has_value());
  EXPECT_TRUE(record_streams_from_env({}));
  // An empty value counts as unset, as everywhere in the environment contract.
  EXPECT_FALSE(blocking_wait_from_env({{"TORCH_NCCL_BLOCKING_WAIT", ""}}).has_value());
}

TEST(NcclSettings, BlockingWaitUnderEveryName) {
  for (const char* name : {"DDP_NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"}) {
    EXPECT_EQ(blocking_wait_from_env({{name, "1"}}), std::optional<bool>(true)) << name;
    EXPECT_EQ(blocking_wait_from_env({{name, "0"}}), std::optional<bool>(false)) << name;
    EXPECT_EQ(blocking_wait_from_env({{name, "true"}}), std::optional<bool>(true)) << name;
  }
}

TEST(NcclSettings, AvoidRecordStreamsIsTheInverseOfRecordStreams) {
  EXPECT_FALSE(record_streams_from_env({{"TORCH_NCCL_AVOID_RECORD_STREAMS", "1"}}));
  EXPECT_TRUE(record_streams_from_env({{"TORCH_NCCL_AVOID_RECORD_STREAMS", "0"}}));
  EXPECT_FALSE(record_streams_from_env({{"DDP_NCCL_RECORD_STREAMS", "0"}}));
  EXPECT_TRUE(record_streams_from_env({{"DDP_NCCL_RECORD_STREAMS", "1"}}));
}

TEST(NcclSettings, OursWinsAndADisagreementIsAWarningNamingBoth) {
  std::optional<bool> blocking;
  std::string log = stderr_of([&] {
    blocking = blocking_wait_from_env({{"DDP_NCCL_BLOCKING_WAIT", "0"}, {"TORCH_NCCL_BLOCKING_WAIT", "1"}});
  });
  EXPECT_EQ(blocking, std::optional<bool>(false));
  EXPECT_NE(log.find("WARN"), std::string::npos) << log;
  EXPECT_NE(log.find("DDP_NCCL_BLOCKING_WAIT=0"), std::string::npos) << log;
  EXPECT_NE(log.find("TORCH_NCCL_BLOCKING_WAIT=1"), std::string::npos) << log;

  bool record = false;
  log = stderr_of([&] {
    record = record_streams_from_env({{"DDP_NCCL_RECORD_STREAMS", "1"}, {"TORCH_NCCL_AVOID_RECORD_STREAMS", "1"}});
  });
  EXPECT_TRUE(record);
  EXPECT_NE(log.find("DDP_NCCL_RECORD_STREAMS=1"), std::string::npos) << log;
  EXPECT_NE(log.find("TORCH_NCCL_AVOID_RECORD_STREAMS=1"), std::string::npos) << log;
}

TEST(NcclSettings, TorchNameWinsOverTheOlderOne) {
  std::optional<bool> blocking;
  std::string log = stderr_of([&] {
    blocking = blocking_wait_from_env({{"TORCH_NCCL_BLOCKING_WAIT", "1"}, {"NCCL_BLOCKING_WAIT", "0"}});
  });
  EXPECT_EQ(blocking, std::optional<bool>(true));
  EXPECT_NE(log.find("NCCL_BLOCKING_WAIT=0"), std::string::npos) << log;
}

TEST(NcclSettings, AgreeingNamesAreQuiet) {
  EXPECT_EQ(stderr_of([] {
              blocking_wait_from_env({{"DDP_NCCL_BLOCKING_WAIT", "1"}, {"TORCH_NCCL_BLOCKING_WAIT", "true"}});
              // Opposite spellings, same meaning: record streams off.
              record_streams_from_env({{"DDP_NCCL_RECORD_STREAMS", "0"}, {"TORCH_NCCL_AVOID_RECORD_STREAMS", "1"}});
            }),
            "");
}

TEST(NcclSettings, ABadValueIsAConfigErrorNamingTheVariable) {
  expect_config_error({{"DDP_NCCL_BLOCKING_WAIT", "maybe"}}, "DDP_NCCL_BLOCKING_WAIT='maybe'");
  expect_config_error({{"TORCH_NCCL_BLOCKING_WAIT", "2"}}, "TORCH_NCCL_BLOCKING_WAIT='2'");
  expect_config_error({{"NCCL_BLOCKING_WAIT", "on"}}, "NCCL_BLOCKING_WAIT='on'");
  expect_config_error({{"DDP_NCCL_RECORD_STREAMS", "off"}}, "DDP_NCCL_RECORD_STREAMS='off'");
  expect_config_error({{"TORCH_NCCL_AVOID_RECORD_STREAMS", "yes please"}}, "TORCH_NCCL_AVOID_RECORD_STREAMS='yes please'");
  // Also when ours is set and would win: a typo is reported, not silently ignored.
  expect_config_error({{"DDP_NCCL_BLOCKING_WAIT", "1"}, {"TORCH_NCCL_BLOCKING_WAIT", "yes!"}}, "TORCH_NCCL_BLOCKING_WAIT='yes!'");
}

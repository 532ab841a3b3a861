// The restart attempt read in one place (src/ddp/core/restart_count.h): WorldInfo and the NCCL
// group's store key agree on it.
#include <ddp/errors.h>
#include <ddp/world_info.h>
#include <gtest/gtest.h>

#include "ddp/core/restart_count.h"

using ddp::detail::restart_count_from_env;

TEST(RestartCount, UnsetOrEmptyIsZero) {
  EXPECT_EQ(restart_count_from_env({}), 0);
  EXPECT_EQ(restart_count_from_env({{"TORCHELASTIC_RESTART_COUNT", ""}}), 0);
}

TEST(RestartCount, ReadsTheCount) {
  EXPECT_EQ(restart_count_from_env({{"TORCHELASTIC_RESTART_COUNT", "3"}}), 3);
}

TEST(RestartCount, GarbageIsAConfigErrorNamingTheVariable) {
  for (const char* bad : {"-1", "two", "3x"}) {
    try {
      restart_count_from_env({{"TORCHELASTIC_RESTART_COUNT", bad}});
      ADD_FAILURE() << bad << " accepted";
    } catch (const ddp::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("TORCHELASTIC_RESTART_COUNT"), std::string::npos) << e.what();
    }
  }
}

TEST(RestartCount, WorldInfoReadsTheSameValue) {
  ddp::WorldInfo w = ddp::WorldInfo::from_env({{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "1"},
                                               {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
                                               {"TORCHELASTIC_RESTART_COUNT", "7"}});
  EXPECT_EQ(w.restart_count, 7);
}

#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "util/env.h"

using namespace ddp::util;

namespace {

template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Env, ProcessEnvAndEmptyMeansUnset) {
  ::setenv("DDP_UTIL_TEST_VALUE", "a=b", 1);
  ::setenv("DDP_UTIL_TEST_EMPTY", "", 1);
  const EnvMap env = process_env();
  EXPECT_EQ(env_get(env, "DDP_UTIL_TEST_VALUE"), "a=b");  // split at the first '='
  EXPECT_EQ(env_get(env, "DDP_UTIL_TEST_EMPTY"), std::nullopt);
  EXPECT_EQ(env_get(env, "DDP_UTIL_TEST_UNSET"), std::nullopt);
  ::unsetenv("DDP_UTIL_TEST_VALUE");
  ::unsetenv("DDP_UTIL_TEST_EMPTY");
}

TEST(Env, RequiredIntegers) {
  const EnvMap env = {{"RANK", "3"}, {"BAD", "x"}};
  EXPECT_EQ(require_env_int(env, "RANK", 0, 7), 3);
  EXPECT_EQ(config_error([&] { require_env_int(env, "WORLD_SIZE", 1, 8); }), "WORLD_SIZE is not set");
  EXPECT_EQ(config_error([&] { require_env_int(env, "BAD", 1, 8); }), "BAD='x' is not an integer");
}

TEST(Env, Booleans) {
  for (const char* yes : {"True", "true", "1", "YES"}) EXPECT_TRUE(parse_bool("B", yes)) << yes;
  for (const char* no : {"False", "false", "0", "no", ""}) EXPECT_FALSE(parse_bool("B", no)) << no;
  EXPECT_EQ(config_error([] { parse_bool("B", "maybe"); }), "B='maybe' is not a boolean (True/False)");
}

TEST(Env, Ports) {
  EXPECT_EQ(parse_port("MASTER_PORT", "29500"), 29500);
  EXPECT_EQ(parse_port("--master-port", "0", /*allow_zero=*/true), 0);
  EXPECT_EQ(config_error([] { parse_port("MASTER_PORT", "0"); }), "MASTER_PORT='0' is out of range: expected 1..65535");
  EXPECT_EQ(config_error([] { parse_port("MASTER_PORT", "65536", true); }),
            "MASTER_PORT='65536' is out of range: expected 0..65535");
}

TEST(Env, NodeRangesAreMinColonMaxWithMinAtMostMax) {
  EXPECT_EQ(parse_node_range("--nnodes", "4").min, 4);
  EXPECT_EQ(parse_node_range("--nnodes", "4").max, 4);
  EXPECT_EQ(parse_node_range("--nnodes", "1:3").min, 1);
  EXPECT_EQ(parse_node_range("--nnodes", "1:3").max, 3);
  EXPECT_EQ(config_error([] { parse_node_range("--nnodes", "3:2"); }),
            "--nnodes='3:2' is not MIN:MAX with MIN <= MAX (3 > 2)");
  EXPECT_EQ(config_error([] { parse_node_range("--nnodes", "0:2"); }),
            "--nnodes='0' is out of range: expected 1..1048576");
}

TEST(Env, NodeCountsWithoutALauncherAreFixed) {
  EXPECT_EQ(parse_node_count("PET_NNODES", "4"), 4);
  EXPECT_EQ(parse_node_count("PET_NNODES", "3:3"), 3);
  EXPECT_EQ(config_error([] { parse_node_count("PET_NNODES", "1:4"); }),
            "PET_NNODES='1:4' is an elastic range, which only a launcher's rendezvous can run (ddprun --rdzv-backend c10d)");
  EXPECT_EQ(config_error([] { parse_node_count("PET_NNODES", "0"); }),
            "PET_NNODES='0' is out of range: expected 1..1048576");
  EXPECT_EQ(config_error([] { parse_node_count("PET_NNODES", "2:x"); }), "PET_NNODES='x' is not an integer");
}

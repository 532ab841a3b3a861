// The flags every trainer shares: defaults, SageMaker's SM_* defaults, and a ConfigError naming the
// flag for every bad value, parsed the way the trainers parse (util::parse_command_line, trainer_rules).
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <cxxopts.hpp>

#include <map>
#include <string>
#include <vector>

#include "trainer/runtime_flags.h"
#include "util/cli.h"

using ddp::trainer::RuntimeOptions;

namespace {

// Parses `args` (after the program name) with only the runtime and help flags registered.
RuntimeOptions parse(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  cxxopts::Options cli("train_test", "test");
  ddp::trainer::add_runtime_flags(cli, "data");
  args.insert(args.begin(), "train_test");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  auto parsed = ddp::util::parse_command_line(cli, static_cast<int>(argv.size()), argv.data(),
                                              ddp::trainer::trainer_rules({}));
  if (!parsed) throw std::logic_error("help or version");
  return ddp::trainer::read_runtime_flags(*parsed, env);
}

// The ConfigError message of parsing `args`; fails the test when there is none.
std::string error_of(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  try {
    parse(args, env);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

}  // namespace

TEST(RuntimeFlags, DefaultsWithoutFlagsOrEnvironment) {
  RuntimeOptions o = parse({});
  EXPECT_EQ(o.data_dir(), "");
  EXPECT_EQ(o.model_dir(), "model");
  EXPECT_EQ(o.metrics_file(), "");
  EXPECT_EQ(o.tensorboard_dir(), "");
  EXPECT_EQ(o.katib_metrics_file(), "");
  EXPECT_EQ(o.backend(), "auto");
  EXPECT_EQ(o.device(), "auto");
  EXPECT_EQ(o.threads(), 0);
  EXPECT_EQ(o.progress(), "auto");
  EXPECT_EQ(o.log_interval(), 10);
  EXPECT_EQ(o.max_steps(), 0);
  EXPECT_EQ(o.timeout_seconds(), 0);
  EXPECT_FALSE(o.static_graph());
  EXPECT_FALSE(o.zero());
}

TEST(RuntimeFlags, SageMakerChannelsAndModelDirAreDefaultsThatFlagsOverride) {
  const std::map<std::string, std::string> both = {{"SM_CHANNEL_TRAIN", "/sm/train"},
                                                   {"SM_CHANNEL_TRAINING", "/sm/training"},
                                                   {"SM_MODEL_DIR", "/sm/model"}};
  RuntimeOptions o = parse({}, both);
  EXPECT_EQ(o.data_dir(), "/sm/train");  // SM_CHANNEL_TRAIN first
  EXPECT_EQ(o.model_dir(), "/sm/model");
  EXPECT_EQ(parse({}, {{"SM_CHANNEL_TRAINING", "/sm/training"}}).data_dir(), "/sm/training");
  RuntimeOptions flags = parse({"--data-dir", "/d", "--model-dir", "/m"}, both);
  EXPECT_EQ(flags.data_dir(), "/d");
  EXPECT_EQ(flags.model_dir(), "/m");
}

TEST(RuntimeFlags, EveryFlagIsRead) {
  RuntimeOptions o = parse({"--metrics-file", "m.jsonl", "--katib-metrics-file", "k.jsonl", "--backend", "gloo", "--device", "cpu", "--threads", "3",
                            "--progress", "plain", "--log-interval", "5", "--max-steps", "7", "--timeout", "2.5",
                            "--tensorboard-dir", "tb", "--static-graph", "--zero"});
  EXPECT_EQ(o.metrics_file(), "m.jsonl");
  EXPECT_EQ(o.katib_metrics_file(), "k.jsonl");
  EXPECT_EQ(o.tensorboard_dir(), "tb");
  EXPECT_EQ(o.backend(), "gloo");
  EXPECT_EQ(o.device(), "cpu");
  EXPECT_EQ(o.threads(), 3);
  EXPECT_EQ(o.progress(), "plain");
  EXPECT_EQ(o.log_interval(), 5);
  EXPECT_EQ(o.max_steps(), 7);
  EXPECT_EQ(o.timeout_seconds(), 2.5);
  EXPECT_TRUE(o.static_graph());
  EXPECT_TRUE(o.zero());
}

TEST(RuntimeFlags, BadValuesNameTheFlag) {
  EXPECT_NE(error_of({"--backend", "mpi"}).find("--backend='mpi' is not one of auto, gloo, nccl"), std::string::npos);
  EXPECT_NE(error_of({"--device", "tpu"}).find("--device='tpu'"), std::string::npos);
  EXPECT_NE(error_of({"--progress", "fancy"}).find("--progress='fancy'"), std::string::npos);
  EXPECT_NE(error_of({"--threads", "-1"}).find("--threads='-1' is out of range: expected 0..1024"), std::string::npos);
  EXPECT_NE(error_of({"--threads", "2x"}).find("--threads='2x'"), std::string::npos);
  EXPECT_NE(error_of({"--log-interval", "0"}).find("--log-interval='0'"), std::string::npos);
  EXPECT_NE(error_of({"--max-steps", "-3"}).find("--max-steps='-3'"), std::string::npos);
  EXPECT_NE(error_of({"--timeout", "-1"}).find("--timeout='-1' is out of range"), std::string::npos);
  EXPECT_NE(error_of({"--timeout", "soon"}).find("--timeout='soon' is not a number"), std::string::npos);
  EXPECT_NE(error_of({"--model-dir", ""}).find("--model-dir is empty"), std::string::npos);
  EXPECT_NE(error_of({"--metrics-file", "m", "--katib-metrics-file", "m"}).find("--katib-metrics-file and --metrics-file"),
            std::string::npos);
  EXPECT_NE(error_of({"--device", "cpu", "--backend", "nccl"}).find("--backend nccl needs CUDA tensors"), std::string::npos);
  EXPECT_NE(error_of({"--no-such-flag"}).find("train_test: "), std::string::npos);
  EXPECT_NE(error_of({"--no-such-flag"}).find("no-such-flag"), std::string::npos);
  EXPECT_NE(error_of({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
}

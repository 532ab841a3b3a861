// trainer/sagemaker_config.h and sagemaker_mode.h in-process: SageMaker's files into a command line.
#include <gtest/gtest.h>

#include <ddp/errors.h>

#include <cxxopts.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trainer/runtime_flags.h"
#include "trainer/sagemaker_config.h"
#include "trainer/sagemaker_mode.h"

namespace {

using namespace ddp::trainer;
namespace fs = std::filesystem;
using Args = std::vector<std::string>;

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

// A trainer-shaped parser: the shared runtime flags, value flags and a switch.
cxxopts::Options trainer_cli() {
  cxxopts::Options cli("train_x", "test");
  add_runtime_flags(cli, "data");
  cli.add_options("Training")("epochs", "", cxxopts::value<std::string>()->default_value("1"))(
      "batch-size", "", cxxopts::value<std::string>()->default_value("8"))("lr", "", cxxopts::value<std::string>())(
      "model-type", "", cxxopts::value<std::string>())("no-augment", "switch")(
      "checkpoint-dir", "", cxxopts::value<std::string>());
  return cli;
}

TEST(SageMakerResourceConfig, ReadsHostsAndToleratesUnknownKeys) {
  const ResourceConfig rc = parse_resource_config(
      R"({"current_host":"algo-2","current_instance_type":"ml.p3.2xlarge","current_group_name":"homogeneousCluster",
          "hosts":["algo-1","algo-2"],"instance_groups":[{"instance_group_name":"homogeneousCluster",
          "instance_type":"ml.p3.2xlarge","hosts":["algo-2","algo-1"]}],"network_interface_name":"eth0"})",
      "rc.json");
  EXPECT_EQ(rc.current_host, "algo-2");
  EXPECT_EQ(rc.hosts, (Args{"algo-1", "algo-2"}));
  EXPECT_EQ(rc.network_interface_name, "eth0");
  EXPECT_EQ(parse_resource_config(R"({"current_host":"a","hosts":["a"]})", "rc").network_interface_name, "");
}

TEST(SageMakerResourceConfig, BadFilesNameTheFileAndTheProblem) {
  auto bad = [](const std::string& text) { return error_of([&] { parse_resource_config(text, "rc.json"); }); };
  EXPECT_EQ(bad(R"({"hosts":["a"]})"), "rc.json: \"current_host\" is missing");
  EXPECT_EQ(bad(R"({"current_host":"a"})"), "rc.json: \"hosts\" is missing");
  EXPECT_EQ(bad(R"({"current_host":"c","hosts":["a","b"]})"), "rc.json: current_host 'c' is not one of hosts");
  EXPECT_EQ(bad(R"({"current_host":"a","hosts":[]})"), "rc.json: hosts is an empty list");
  EXPECT_EQ(bad(R"({"current_host":"a","hosts":"a"})"), "rc.json: hosts is a string, not a list of host names");
  EXPECT_EQ(bad(R"({"current_host":"a","hosts":["a",1]})"), "rc.json: hosts[1] is a number, not a string");
  EXPECT_EQ(bad(R"({"current_host":"a","hosts":["a","a"]})"), "rc.json: hosts[1] 'a' is listed twice");
  EXPECT_EQ(bad(R"({"current_host":"a","hosts":["a"],"network_interface_name":7})"),
            "rc.json: network_interface_name is a number, not a string");
  EXPECT_EQ(bad("[]"), "rc.json: the document is an array, not a JSON object");
  EXPECT_EQ(bad(R"({"current_host":"a",)"), "rc.json: not valid JSON at offset 20: expected a member name (a string)");
}

TEST(SageMakerHyperparameters, DecodedAsTheToolkitDoes) {
  const Hyperparameters hp = parse_hyperparameters(
      R"({"backend":"gloo","model-type":"\"custom\"","epochs":"1","lr":"0.010","batch-size":64,
          "no-augment":"true","seed":true,"sagemaker_program":"\"cifar10.py\"","sagemaker_region":"\"us-west-2\""})",
      "hp.json");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"backend", "gloo"}, {"model-type", "custom"}, {"epochs", "1"}, {"lr", "0.010"},
      {"batch-size", "64"}, {"no-augment", "true"}, {"seed", "true"}};
  EXPECT_EQ(hp.values, want);
  EXPECT_EQ(hp.ignored, (Args{"sagemaker_program", "sagemaker_region"}));
}

TEST(SageMakerHyperparameters, StructuredValuesAreRefusedByName) {
  auto bad = [](const std::string& text) { return error_of([&] { parse_hyperparameters(text, "hp.json"); }); };
  EXPECT_EQ(bad(R"({"lr":"[1,2]"})"),
            "hp.json: hyperparameter \"lr\" is an array: a trainer flag takes one string, number or boolean");
  EXPECT_EQ(bad(R"({"lr":{"a":1}})"),
            "hp.json: hyperparameter \"lr\" is an object: a trainer flag takes one string, number or boolean");
  EXPECT_EQ(bad(R"({"lr":null})"),
            "hp.json: hyperparameter \"lr\" is null: a trainer flag takes one string, number or boolean");
  EXPECT_EQ(bad(R"(["lr"])"), "hp.json: the document is an array, not a JSON object");
  EXPECT_NE(bad(R"({"lr":"1","lr":"2"})").find("duplicate member name \"lr\""), std::string::npos);
}

TEST(SageMakerInputDataConfig, ChannelsInFileAndFastFileModeOnly) {
  EXPECT_EQ(parse_input_data_config(
                R"({"training":{"TrainingInputMode":"File","S3DistributionType":"FullyReplicated"},"test":{}})", "i"),
            (Args{"training", "test"}));
  EXPECT_EQ(parse_input_data_config(R"({"train":{"TrainingInputMode":"FastFile","RecordWrapperType":"None"}})", "i"),
            (Args{"train"}));
  EXPECT_EQ(error_of([] { parse_input_data_config(R"({"training":{"TrainingInputMode":"Pipe"}})", "i.json"); }),
            "i.json: channel \"training\" has TrainingInputMode 'Pipe'; the trainers read files: use File or FastFile");
}

TEST(SageMakerProgram, TrainerHyperparameterOrSagemakerProgramElseTheEntrypoint) {
  const Hyperparameters none = parse_hyperparameters(R"({"epochs":"1"})", "hp");
  const Hyperparameters ranzcr = parse_hyperparameters(R"({"trainer":"\"ranzcr\"","epochs":"1"})", "hp");
  EXPECT_EQ(ranzcr.trainer, "ranzcr");
  EXPECT_EQ(ranzcr.values, (std::vector<std::pair<std::string, std::string>>{{"epochs", "1"}}));
  EXPECT_EQ(sagemaker_trainer(none, {}, "train_cifar10"), "train_cifar10");
  EXPECT_EQ(sagemaker_trainer(ranzcr, {}, "train_cifar10"), "train_ranzcr");
  EXPECT_EQ(sagemaker_trainer(none, {{"SAGEMAKER_PROGRAM", "train_ranzcr"}}, "train_cifar10"), "train_ranzcr");
  EXPECT_EQ(sagemaker_trainer(none, {{"SAGEMAKER_PROGRAM", "cifar10"}}, "train_ranzcr"), "train_cifar10");
  EXPECT_EQ(sagemaker_trainer(ranzcr, {{"SAGEMAKER_PROGRAM", "train_ranzcr"}}, "train_cifar10"), "train_ranzcr");
}

TEST(SageMakerProgram, UnknownOrConflictingChoicesNameTheValues) {
  const Hyperparameters ranzcr = parse_hyperparameters(R"({"trainer":"ranzcr"})", "hp");
  const Hyperparameters bad = parse_hyperparameters(R"({"trainer":"resnet"})", "hp");
  EXPECT_EQ(error_of([&] { sagemaker_trainer(bad, {}, "train_cifar10"); }),
            "hyperparameter \"trainer\"='resnet' is not a trainer: cifar10 or ranzcr (train_cifar10 or train_ranzcr)");
  EXPECT_EQ(error_of([&] { sagemaker_trainer(ranzcr, {{"SAGEMAKER_PROGRAM", "train.py"}}, "train_cifar10"); }),
            "SAGEMAKER_PROGRAM='train.py' is not a trainer: cifar10 or ranzcr (train_cifar10 or train_ranzcr)");
  EXPECT_EQ(error_of([&] { sagemaker_trainer(ranzcr, {{"SAGEMAKER_PROGRAM", "cifar10"}}, "train_cifar10"); }),
            "hyperparameter \"trainer\"='ranzcr' and SAGEMAKER_PROGRAM='cifar10' name different trainers: set one");
}

// A fake /opt/ml for the mapping tests.
struct Root {
  Root() : path(fs::temp_directory_path() / ("ddp-sm-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))) {
    fs::create_directories(path / "input" / "config");
  }
  ~Root() { fs::remove_all(path); }
  SageMakerConfig config(const std::string& hyperparameters) const {
    SageMakerConfig c;
    c.root = path.string();
    c.resources = parse_resource_config(R"({"current_host":"a","hosts":["a"]})", "rc");
    c.hyperparameters = parse_hyperparameters(hyperparameters, "hp");
    return c;
  }
  fs::path path;
  static inline int counter = 0;
};

TEST(SageMakerArguments, HyperparametersBecomeFlags) {
  Root root;
  fs::create_directories(root.path / "input" / "data" / "training");
  auto cli = trainer_cli();
  const Args args = sagemaker_arguments(
      cli, "train_x", root.config(R"({"backend":"gloo","epochs":"2","lr":"0.01","model-type":"\"custom\"","no-augment":"true"})"));
  const std::string r = root.path.string();
  EXPECT_EQ(args, (Args{"train_x", "--data-dir", r + "/input/data/training", "--model-dir", r + "/model", "--backend=gloo",
                        "--epochs=2", "--lr=0.01", "--model-type=custom", "--no-augment"}));
  // The result parses with the trainer's own parser.
  TrainerArgs ta(args);
  auto parsed = cli.parse(ta.argc(), ta.argv());
  EXPECT_EQ(parsed["lr"].as<std::string>(), "0.01");
  EXPECT_EQ(parsed.count("no-augment"), 1u);
}

TEST(SageMakerArguments, ChannelCheckpointsAndSwitches) {
  Root root;
  fs::create_directories(root.path / "input" / "data" / "train");
  fs::create_directories(root.path / "checkpoints");
  auto cli = trainer_cli();
  const std::string r = root.path.string();
  EXPECT_EQ(sagemaker_arguments(cli, "train_x", root.config(R"({"no-augment":"false"})")),
            (Args{"train_x", "--data-dir", r + "/input/data/train", "--model-dir", r + "/model", "--checkpoint-dir",
                  r + "/checkpoints"}));
  // A checkpoint-dir hyperparameter wins over /opt/ml/checkpoints.
  EXPECT_EQ(sagemaker_arguments(cli, "train_x", root.config(R"({"checkpoint-dir":"/x"})")).back(), "--checkpoint-dir=/x");
  // inputdataconfig.json decides when present: a declared channel without training/train is an error.
  SageMakerConfig c = root.config("{}");
  c.has_input_data_config = true;
  c.channels = {"validation"};
  EXPECT_EQ(error_of([&] { sagemaker_arguments(cli, "train_x", c); }),
            r + "/input/config/inputdataconfig.json declares no channel named training or train (channels: validation)");
  c.channels = {"validation", "training"};
  EXPECT_EQ(sagemaker_arguments(cli, "train_x", c)[2], r + "/input/data/training");
}

TEST(SageMakerArguments, UnknownReservedAndBadSwitchValuesAreErrorsNamingThem) {
  Root root;
  fs::create_directories(root.path / "input" / "data" / "training");
  auto cli = trainer_cli();
  const std::string hp = root.path.string() + "/input/config/hyperparameters.json: hyperparameter ";
  auto bad = [&](const std::string& text) { return error_of([&] { sagemaker_arguments(cli, "train_x", root.config(text)); }); };
  EXPECT_EQ(bad(R"({"epochs":"1","momentun":"0.9"})"),
            hp + "\"momentun\" is not a flag of train_x (see train_x --help; SageMaker's own sagemaker_* names are ignored)");
  EXPECT_EQ(bad(R"({"model-dir":"/tmp"})"),
            hp + "\"model-dir\" cannot be set here: SageMaker mode sets it (/opt/ml/model, the folder SageMaker uploads)");
  EXPECT_EQ(bad(R"({"no-augment":"maybe"})"), hp + "\"no-augment\"='maybe' is a switch: expected true or false");
  Root empty;
  EXPECT_EQ(error_of([&] { sagemaker_arguments(cli, "train_x", empty.config("{}")); }),
            "no training channel: neither " + empty.path.string() + "/input/data/training nor " + empty.path.string() +
                "/input/data/train exists");
}

TEST(SageMakerRoot, DefaultAndOverride) {
  EXPECT_EQ(sagemaker_root({}), "/opt/ml");
  EXPECT_EQ(sagemaker_root({{"SAGEMAKER_BASE_DIR", "/tmp/x"}}), "/tmp/x");
  EXPECT_EQ(error_of([] { sagemaker_root({{"SAGEMAKER_BASE_DIR", "rel"}}); }),
            "SAGEMAKER_BASE_DIR='rel' is not an absolute path");
}

TEST(SageMakerMode, OnlyTrainSwitchesIt) {
  const char* with[] = {"x", "train", nullptr};
  const char* without[] = {"x", "--train", nullptr};
  EXPECT_TRUE(is_sagemaker_train(2, with));
  EXPECT_FALSE(is_sagemaker_train(2, without));
  EXPECT_FALSE(is_sagemaker_train(1, with));
  auto cli = trainer_cli();
  const TrainerArgs passthrough = sagemaker_or_command_line(cli, 2, without);
  EXPECT_EQ(passthrough.args(), (Args{"x", "--train"}));
}

}  // namespace

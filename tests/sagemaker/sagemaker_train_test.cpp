// `train_cifar10 train` end to end: a fake /opt/ml (SAGEMAKER_BASE_DIR) with SageMaker's files, the
// real binary, synthetic data from the real generator; two instances as two processes over loopback.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "support/subprocess.h"

namespace {

namespace fs = std::filesystem;
using ddp::testing::Subprocess;

// The AWS workshop's hyperparameters (what its estimator sends: json-encoded strings) plus the SDK's.
const char* kWorkshop =
    R"({"backend":"\"gloo\"","batch-size":"32","epochs":"1","lr":"0.01","model-type":"\"custom\"",)"
    R"("timeout":"60","sagemaker_program":"\"cifar10-distributed-gpu-final.py\"",)"
    R"("sagemaker_submit_directory":"\"s3://b/code.tar.gz\"","sagemaker_region":"\"us-west-2\"",)"
    R"("sagemaker_container_log_level":"20","sagemaker_job_name":"\"cifar10-ddp\""})";

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// The synthetic set, made once per test process and removed at exit.
struct Dataset {
  Dataset() : dir(fs::temp_directory_path() / ("ddp-sm-data-" + std::to_string(::getpid()))) {
    Subprocess p({DDP_MAKE_CIFAR10_SYNTHETIC, "--out", dir.string(), "--train", "500", "--test", "100", "--seed", "3",
                  "--layout", "bin"});
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 0) << p.output();
  }
  ~Dataset() { fs::remove_all(dir); }
  fs::path dir;
};

const fs::path& dataset() {
  static const Dataset d;
  return d.dir;
}

// One instance's /opt/ml: config files and a copy of the data in the training channel.
struct Instance {
  Instance(const std::string& name, const std::string& hosts_json, const std::string& hyperparameters,
           const std::string& nic = "lo")
      : root(fs::temp_directory_path() / ("ddp-sm-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(root);
    write(root / "input/config/resourceconfig.json",
          R"({"current_host":")" + name + R"(","current_instance_type":"ml.p3.2xlarge","current_group_name":)"
          R"("homogeneousCluster","hosts":)" + hosts_json + R"(,"instance_groups":[{"instance_group_name":)"
          R"("homogeneousCluster","instance_type":"ml.p3.2xlarge","hosts":)" + hosts_json +
          R"(}],"network_interface_name":")" + nic + R"("})");
    write(root / "input/config/hyperparameters.json", hyperparameters);
    write(root / "input/config/inputdataconfig.json",
          R"({"training":{"TrainingInputMode":"File","S3DistributionType":"FullyReplicated","RecordWrapperType":"None"}})");
    fs::create_directories(root / "input/data/training");
    fs::copy(dataset(), root / "input/data/training", fs::copy_options::recursive);
  }
  ~Instance() { fs::remove_all(root); }
  std::unique_ptr<Subprocess> start() const {
    return std::make_unique<Subprocess>(std::vector<std::string>{DDP_TRAIN_CIFAR10, "train"},
                                        std::map<std::string, std::string>{{"SAGEMAKER_BASE_DIR", root.string()},
                                                                           {"OMP_NUM_THREADS", "1"},
                                                                           {"DDP_LOG_LEVEL", "INFO"}});
  }
  std::string failure() const { return read(root / "output/failure"); }
  fs::path root;
};

int finish(Subprocess& p) {
  int status = p.wait(std::chrono::seconds(150));
  if (status == -1) p.kill(SIGKILL);
  return status;
}

TEST(SageMakerTrain, WorkshopHyperparametersTrainAndWriteTheModel) {
  Instance one("localhost", R"(["localhost"])", kWorkshop);
  auto p = one.start();
  ASSERT_EQ(finish(*p), 0) << p->output();
  EXPECT_GT(fs::file_size(one.root / "model/model.pt"), 1000u);
  EXPECT_FALSE(fs::exists(one.root / "output/failure"));
  const std::string out = p->output();
  EXPECT_NE(out.find("sagemaker: hyperparameter sagemaker_program ignored"), std::string::npos) << out;
  EXPECT_NE(out.find("--model-type=custom"), std::string::npos) << out;
}

TEST(SageMakerTrain, BadModelTypeExits2AndWritesTheFailureFile) {
  std::string hp = kWorkshop;
  hp.replace(hp.find(R"("\"custom\"")"), 12, R"("\"resnet\"")");
  Instance one("localhost", R"(["localhost"])", hp);
  auto p = one.start();
  ASSERT_EQ(finish(*p), 2) << p->output();
  EXPECT_NE(one.failure().find("--model-type='resnet' is not one of custom"), std::string::npos) << one.failure();
  EXPECT_FALSE(fs::exists(one.root / "model/model.pt"));
}

TEST(SageMakerTrain, UnknownHyperparameterExits2NamingIt) {
  std::string hp = kWorkshop;
  hp.insert(1, R"("learning-rate":"0.1",)");
  Instance one("localhost", R"(["localhost"])", hp);
  auto p = one.start();
  ASSERT_EQ(finish(*p), 2) << p->output();
  EXPECT_NE(one.failure().find("hyperparameter \"learning-rate\" is not a flag of train_cifar10"), std::string::npos)
      << one.failure();
}

TEST(SageMakerTrain, BrokenJsonExits2NamingTheFileAndOffset) {
  Instance one("localhost", R"(["localhost"])", R"({"epochs":"1",})");
  auto p = one.start();
  ASSERT_EQ(finish(*p), 2) << p->output();
  EXPECT_EQ(one.failure(), (one.root / "input/config/hyperparameters.json").string() +
                               ": not valid JSON at offset 14: expected a member name (a string)\n");
}

TEST(SageMakerTrain, ExtraArgumentsAfterTrainAreRefused) {
  Instance one("localhost", R"(["localhost"])", kWorkshop);
  Subprocess p({DDP_TRAIN_CIFAR10, "train", "--epochs", "3"}, {{"SAGEMAKER_BASE_DIR", one.root.string()}});
  ASSERT_EQ(finish(p), 2) << p.output();
  EXPECT_NE(one.failure().find("train: unexpected argument '--epochs'"), std::string::npos) << one.failure();
}

// Two instances over loopback: "127.0.0.1" is algo-1 (rank 0, the master), "localhost" algo-2. Port
// 7777, as on SageMaker. Only rank 0 writes the model.
TEST(SageMakerTrain, TwoInstancesTrainTogether) {
  const std::string hosts = R"(["127.0.0.1","localhost"])";
  Instance first("127.0.0.1", hosts, kWorkshop), second("localhost", hosts, kWorkshop);
  auto a = first.start();
  auto b = second.start();
  ASSERT_EQ(finish(*a), 0) << a->output();
  ASSERT_EQ(finish(*b), 0) << b->output();
  EXPECT_NE(a->output().find("rank 0/2"), std::string::npos) << a->output();
  EXPECT_NE(b->output().find("rank 1/2"), std::string::npos) << b->output();
  EXPECT_TRUE(fs::exists(first.root / "model/model.pt"));
  EXPECT_FALSE(fs::exists(second.root / "model/model.pt"));
}

}  // namespace

#ifdef DDP_TRAIN_RANZCR
namespace {

// A RANZCR /opt/ml on a synthetic set: the `train` channel, one instance.
fs::path ranzcr_root(const std::string& name, const std::string& hyperparameters) {
  const fs::path root = fs::temp_directory_path() / ("ddp-sm-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(root);
  Subprocess make({DDP_MAKE_RANZCR_SYNTHETIC, "--out", (root / "input/data/train").string(), "-n", "40", "--size", "64"});
  EXPECT_EQ(make.wait(std::chrono::seconds(60)), 0) << make.output();
  write(root / "input/config/resourceconfig.json", R"({"current_host":"localhost","hosts":["localhost"]})");
  write(root / "input/config/inputdataconfig.json", R"({"train":{"TrainingInputMode":"FastFile"}})");
  write(root / "input/config/hyperparameters.json", hyperparameters);
  return root;
}

const char* kRanzcr = R"("epochs":"1","batch-size":"8","image-size":"32","arch":"\"resnet18\"","device":"\"cpu\"",)"
                      R"("backend":"\"gloo\"","max-steps":"2")";

// PATH with train_ranzcr's build folder first: in the image both trainers share /opt/ddp/bin.
std::map<std::string, std::string> ranzcr_env(const fs::path& root, std::map<std::string, std::string> extra = {}) {
  extra["SAGEMAKER_BASE_DIR"] = root.string();
  extra["OMP_NUM_THREADS"] = "1";
  extra["PATH"] = fs::path(DDP_TRAIN_RANZCR).parent_path().string() + ":" + std::getenv("PATH");
  return extra;
}

}  // namespace

// One image runs either trainer: the ENTRYPOINT (train_cifar10) hands over to train_ranzcr when the job
// says so by hyperparameter or by SAGEMAKER_PROGRAM, and refuses two different answers.
TEST(SageMakerTrain, TheEntrypointRunsTrainRanzcrWhenTheJobAsksForIt) {
  const fs::path root = ranzcr_root("pick", std::string("{") + kRanzcr + R"(,"trainer":"\"ranzcr\""})");
  Subprocess by_hp({DDP_TRAIN_CIFAR10, "train"}, ranzcr_env(root));
  ASSERT_EQ(finish(by_hp), 0) << by_hp.output();
  EXPECT_NE(by_hp.output().find("sagemaker: the job asks for train_ranzcr: running "), std::string::npos) << by_hp.output();
  EXPECT_NE(by_hp.output().find("train_ranzcr: rank 0/1"), std::string::npos) << by_hp.output();
  EXPECT_TRUE(fs::exists(root / "model/model.pt"));
  fs::remove(root / "model/model.pt");
  write(root / "input/config/hyperparameters.json", std::string("{") + kRanzcr + "}");
  Subprocess by_env({DDP_TRAIN_CIFAR10, "train"}, ranzcr_env(root, {{"SAGEMAKER_PROGRAM", "train_ranzcr"}}));
  ASSERT_EQ(finish(by_env), 0) << by_env.output();
  EXPECT_TRUE(fs::exists(root / "model/model.pt"));
  write(root / "input/config/hyperparameters.json", std::string("{") + kRanzcr + R"(,"trainer":"cifar10"})");
  Subprocess both({DDP_TRAIN_CIFAR10, "train"}, ranzcr_env(root, {{"SAGEMAKER_PROGRAM", "train_ranzcr"}}));
  ASSERT_EQ(finish(both), 2) << both.output();
  EXPECT_EQ(read(root / "output/failure"), "hyperparameter \"trainer\"='cifar10' and SAGEMAKER_PROGRAM='train_ranzcr' "
                                           "name different trainers: set one\n");
  fs::remove_all(root);
}

// train_ranzcr shares the mode: it trains from the `train` channel, and the CIFAR workshop's
// model-type is not one of its flags.
TEST(SageMakerTrain, RanzcrTrainsFromTheTrainChannelAndRefusesModelType) {
  const fs::path root = fs::temp_directory_path() / ("ddp-sm-" + std::to_string(::getpid()) + "-ranzcr");
  fs::remove_all(root);
  Subprocess make({DDP_MAKE_RANZCR_SYNTHETIC, "--out", (root / "input/data/train").string(), "-n", "40", "--size", "64"});
  ASSERT_EQ(make.wait(std::chrono::seconds(60)), 0) << make.output();
  write(root / "input/config/resourceconfig.json", R"({"current_host":"localhost","hosts":["localhost"]})");
  write(root / "input/config/hyperparameters.json",
        R"({"epochs":"1","batch-size":"8","image-size":"32","arch":"\"resnet18\"","device":"\"cpu\"",)"
        R"("backend":"\"gloo\"","max-steps":"2","sagemaker_program":"\"x\""})");
  const std::map<std::string, std::string> env = {{"SAGEMAKER_BASE_DIR", root.string()}, {"OMP_NUM_THREADS", "1"}};
  Subprocess ok({DDP_TRAIN_RANZCR, "train"}, env);
  EXPECT_EQ(finish(ok), 0) << ok.output();
  EXPECT_TRUE(fs::exists(root / "model/model.pt"));
  write(root / "input/config/hyperparameters.json", R"({"model-type":"\"custom\""})");
  Subprocess bad({DDP_TRAIN_RANZCR, "train"}, env);
  EXPECT_EQ(finish(bad), 2) << bad.output();
  EXPECT_NE(read(root / "output/failure").find("hyperparameter \"model-type\" is not a flag of train_ranzcr"),
            std::string::npos);
  fs::remove_all(root);
}
#endif

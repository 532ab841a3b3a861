// train_cifar10 under ddprun (and torchrun) with real interruptions on synthetic data: the final
// model.pt must hold exactly the weights of an uninterrupted run with the same seed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/multiprocess.h"

namespace fs = std::filesystem;
using ddp::testing::Subprocess;
using namespace std::chrono_literals;

namespace {

const std::string kDdprun = std::string(DDP_BUILD_DIR) + "/apps/ddprun/ddprun";

// 3200 training images, 2 ranks x batch 16: 100 steps per epoch, 200 in all; a checkpoint every 25.
std::vector<std::string> cifar_args(const std::string& data, const std::string& model_dir, const std::string& ckpt_dir) {
  return {DDP_TRAIN_CIFAR10, "--data-dir", data, "--model-dir", model_dir, "--epochs", "2", "--batch-size", "16",
          "--test-batch-size", "200", "--log-interval", "10", "--progress", "plain", "--threads", "1", "--workers", "1",
          "--checkpoint-dir", ckpt_dir, "--checkpoint-every", "25"};
}

std::vector<std::string> with_launcher(std::vector<std::string> launcher, const std::vector<std::string>& program) {
  launcher.insert(launcher.end(), program.begin(), program.end());
  return launcher;
}

c10::Dict<c10::IValue, c10::IValue> load_state(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  return torch::pickle_load(bytes).toGenericDict();
}

// Every tensor equal, bit for bit (max |a - b| == 0).
void expect_same_model(const std::string& expected_path, const std::string& actual_path) {
  ASSERT_TRUE(fs::exists(actual_path)) << actual_path;
  auto expected = load_state(expected_path), actual = load_state(actual_path);
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& e : expected) {
    const std::string name = e.key().toStringRef();
    ASSERT_TRUE(actual.contains(name)) << name;
    at::Tensor a = e.value().toTensor(), b = actual.at(name).toTensor();
    ASSERT_EQ(a.sizes(), b.sizes()) << name;
    EXPECT_TRUE(torch::equal(a, b)) << name << ": max |diff| = " << (a - b).abs().max().item<double>();
  }
}

bool wait_for(Subprocess& p, const std::string& text, std::chrono::seconds limit = 120s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p.output().find(text) != std::string::npos) return true;
    if (!p.running()) return false;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// The child of `parent` whose environment has RANK=<rank> (ddprun's worker), or -1.
pid_t worker_of(pid_t parent, int rank) {
  DIR* d = opendir("/proc");
  pid_t found = -1;
  while (dirent* e = d ? readdir(d) : nullptr) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string s((std::istreambuf_iterator<char>(stat)), {});
    auto close = s.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(s.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env("/proc/" + std::string(e->d_name) + "/environ");
    std::string vars((std::istreambuf_iterator<char>(env)), {});
    if (vars.find(std::string("\0RANK=", 6) + std::to_string(rank) + std::string("\0", 1)) != std::string::npos) {
      found = pid;
      break;
    }
  }
  if (d) closedir(d);
  return found;
}

class CifarResume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = ddp::testing::make_temp_dir("cifar-resume");
    data = dir + "/data";
    Subprocess gen({DDP_MAKE_CIFAR10_SYNTHETIC, "--out", data, "--train", "3200", "--test", "200", "--seed", "4",
                    "--layout", "bin"});
    ASSERT_EQ(gen.wait(60s), 0) << gen.output();
    Subprocess base(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2"},
                                  cifar_args(data, dir + "/baseline", dir + "/ck-baseline")));
    ASSERT_EQ(base.wait(180s), 0) << base.output();
    baseline = dir + "/baseline/model.pt";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir, data, baseline;
};

}  // namespace

TEST_F(CifarResume, KillNineMidEpochUnderDdprunGivesTheUninterruptedWeights) {
  Subprocess p(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2", "--max-restarts", "2",
                              "--monitor-interval", "0.05"},
                             cifar_args(data, dir + "/killed", dir + "/ck")));
  // Rank 0 logs every 10 steps; at step 30 of epoch 2 (global 130) the last checkpoint is step 125.
  ASSERT_TRUE(wait_for(p, "Train Epoch: 2 [480/1600")) << p.output();
  pid_t victim = worker_of(p.pid(), 1);
  ASSERT_GT(victim, 0) << "rank 1's worker not found among ddprun's children";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(p.wait(180s), 0) << p.output();
  EXPECT_NE(p.output().find("worker rank 1 (local 1) was killed by SIGKILL"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("resumed from " + dir + "/ck/ckpt-"), std::string::npos) << p.output();
  expect_same_model(baseline, dir + "/killed/model.pt");
}

TEST_F(CifarResume, SigtermCheckpointsExits143AndResumeAutoGivesTheUninterruptedWeights) {
  Subprocess first(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2", "--grace-period", "30"},
                                 cifar_args(data, dir + "/stopped", dir + "/ck")));
  ASSERT_TRUE(wait_for(first, "Train Epoch: 1 [480/1600")) << first.output();
  auto sent = std::chrono::steady_clock::now();
  first.kill(SIGTERM);
  EXPECT_EQ(first.wait(60s), 143) << first.output();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 30s);
  EXPECT_NE(first.output().find("stopping on signal 15 after global step"), std::string::npos) << first.output();
  EXPECT_FALSE(fs::exists(dir + "/stopped/model.pt"));

  Subprocess second(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2"},
                                  [&] {
                                    auto a = cifar_args(data, dir + "/stopped", dir + "/ck");
                                    a.insert(a.end(), {"--resume", "auto"});
                                    return a;
                                  }()));
  ASSERT_EQ(second.wait(180s), 0) << second.output();
  EXPECT_NE(second.output().find("resumed from " + dir + "/ck/ckpt-"), std::string::npos) << second.output();
  expect_same_model(baseline, dir + "/stopped/model.pt");
}

TEST_F(CifarResume, TorchrunTrainsToTheSameWeightsAsDdprun) {
  // Debian's torchrun 1.13 (Python 3.11) needs --redirects/--tee "1": it cannot parse its own "0".
  Subprocess p(with_launcher({"/usr/bin/torchrun", "--standalone", "--nproc_per_node", "2", "--redirects", "1", "--tee",
                              "1", "--log_dir", dir + "/torchrun-logs", "--no_python"},
                             cifar_args(data, dir + "/torchrun", dir + "/ck")),
               {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(p.wait(180s), 0) << p.output();
  expect_same_model(baseline, dir + "/torchrun/model.pt");
}

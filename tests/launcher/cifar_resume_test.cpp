// train_cifar10 under ddprun (and torchrun) with real interruptions on synthetic data: the final
// model.pt must hold exactly the weights of an uninterrupted run with the same seed.
//
// A restart that ignored the checkpoint would also end with those weights (the seed determines the
// whole run), so the resume tests also read the resumed attempt's summary in --metrics-file: it must
// have trained exactly the images of the steps after the checkpoint it names.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "launcher_binaries.h"
#include "support/multiprocess.h"
#include "support/torchrun.h"

namespace fs = std::filesystem;
using ddp::testing::Subprocess;
using namespace std::chrono_literals;

namespace {

// 3200 training images, 2 ranks x batch 16: 100 steps per epoch, 200 in all; a checkpoint every 25.
constexpr int64_t kTotalSteps = 200;
constexpr int64_t kImagesPerStep = 2 * 16;
std::vector<std::string> cifar_args(const std::string& data, const std::string& model_dir, const std::string& ckpt_dir) {
  return {DDP_TRAIN_CIFAR10, "--data-dir", data, "--model-dir", model_dir, "--epochs", "2", "--batch-size", "16",
          "--test-batch-size", "200", "--log-interval", "10", "--progress", "plain", "--threads", "1", "--workers", "1",
          "--checkpoint-dir", ckpt_dir, "--checkpoint-every", "25"};
}

// 3200 training and 200 test images of synthetic CIFAR-10 in `data` (the binary layout).
void make_synthetic_cifar(const std::string& data) {
  Subprocess gen({DDP_MAKE_CIFAR10_SYNTHETIC, "--out", data, "--train", "3200", "--test", "200", "--seed", "4",
                  "--layout", "bin"});
  ASSERT_EQ(gen.wait(60s), 0) << gen.output();
}

std::vector<std::string> with_launcher(std::vector<std::string> launcher, const std::vector<std::string>& program) {
  launcher.insert(launcher.end(), program.begin(), program.end());
  return launcher;
}

// The last "summary" record of a --metrics-file: `"name":<integer>`, or -1.
int64_t summary_value(const std::string& metrics_path, const std::string& name) {
  std::ifstream in(metrics_path);
  int64_t value = -1;
  std::smatch m;
  const std::regex re("\"" + name + "\":([0-9]+)");
  for (std::string line; std::getline(in, line);)
    if (line.find("\"type\":\"summary\"") != std::string::npos && std::regex_search(line, m, re)) value = std::stoll(m[1]);
  return value;
}

// The run resumed from a checkpoint after step 0 (`output` names it) and the attempt that finished
// trained exactly the steps after it: a restart that started over trains all 200 steps' images.
void expect_resumed_and_trained_the_rest(const std::string& output, const std::string& metrics_path) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(resumed from \S*ckpt-([0-9]+)\.ddpckpt)"))) << output;
  const int64_t from = std::stoll(m[1]);
  EXPECT_GT(from, 0);
  EXPECT_EQ(summary_value(metrics_path, "steps"), kTotalSteps);
  EXPECT_EQ(summary_value(metrics_path, "trained_images"), (kTotalSteps - from) * kImagesPerStep)
      << "the resumed attempt must train only steps " << from + 1 << ".." << kTotalSteps;
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
  /// Flags every run of the test adds (the PowerSGD fixture's comm hook).
  virtual std::vector<std::string> extra_args() const { return {}; }
  /// A line the resumed run must log, showing that extra_args() took effect ("": none).
  virtual std::string expected_log() const { return ""; }
  std::vector<std::string> args(const std::string& model_dir, const std::string& ckpt_dir) const {
    auto a = cifar_args(data, model_dir, ckpt_dir);
    for (const auto& e : extra_args()) a.push_back(e);
    return a;
  }
  void SetUp() override {
    dir = ddp::testing::make_temp_dir("cifar-resume");
    data = dir + "/data";
    ASSERT_NO_FATAL_FAILURE(make_synthetic_cifar(data));
    Subprocess base(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2"},
                                  args(dir + "/baseline", dir + "/ck-baseline")));
    ASSERT_EQ(base.wait(180s), 0) << base.output();
    baseline = dir + "/baseline/model.pt";
  }
  void TearDown() override { fs::remove_all(dir); }
  /// SIGTERM to ddprun mid-epoch 1, exit 143 after a checkpoint; a second run with --resume auto
  /// trains only the rest and ends with the baseline's weights.
  void expect_sigterm_then_resume_gives_the_baseline() {
    Subprocess first(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2", "--grace-period", "30"},
                                   args(dir + "/stopped", dir + "/ck")));
    ASSERT_TRUE(wait_for(first, "Train Epoch: 1 [480/1600")) << first.output();
    auto sent = std::chrono::steady_clock::now();
    first.kill(SIGTERM);
    EXPECT_EQ(first.wait(60s), 143) << first.output();
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 30s);
    EXPECT_NE(first.output().find("stopping on signal 15 after global step"), std::string::npos) << first.output();
    EXPECT_FALSE(fs::exists(dir + "/stopped/model.pt"));

    Subprocess second(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2"},
                                    [&] {
                                      auto a = args(dir + "/stopped", dir + "/ck");
                                      a.insert(a.end(), {"--resume", "auto", "--metrics-file", dir + "/resumed-metrics.jsonl"});
                                      return a;
                                    }()));
    ASSERT_EQ(second.wait(180s), 0) << second.output();
    EXPECT_NE(second.output().find("resumed from " + dir + "/ck/ckpt-"), std::string::npos) << second.output();
    EXPECT_NE(second.output().find(expected_log()), std::string::npos) << second.output();
    expect_resumed_and_trained_the_rest(second.output(), dir + "/resumed-metrics.jsonl");
    expect_same_model(baseline, dir + "/stopped/model.pt");
  }

  std::string dir, data, baseline;
};

// The same runs with PowerSGD (rank 1, compressing from step 2): the hook's state (step count,
// generator, each rank's error feedback, the warm-start Qs, DDP's buckets) must come back from the
// checkpoint, or the resumed run's compressed gradients, and so its weights, differ.
class CifarResumePowerSGD : public CifarResume {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--comm-hook", "powersgd:1", "--powersgd-start-iter", "2"};
  }
};

// The same runs with --zero: SGD's momentum is sharded across the ranks, consolidated into each
// checkpoint and split again on resume; a shard's momentum lost on the way changes the weights.
class CifarResumeZero : public CifarResume {
 protected:
  std::vector<std::string> extra_args() const override { return {"--zero"}; }
  std::string expected_log() const override { return "--zero: optimizer state sharded over 2 ranks"; }
};

}  // namespace

TEST_F(CifarResume, KillNineMidEpochUnderDdprunGivesTheUninterruptedWeights) {
  const std::string metrics = dir + "/killed-metrics.jsonl";
  Subprocess p(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2", "--max-restarts", "2",
                              "--monitor-interval", "0.05"},
                             [&] {
                               auto a = args(dir + "/killed", dir + "/ck");
                               a.insert(a.end(), {"--metrics-file", metrics});
                               return a;
                             }()));
  // Rank 0 logs every 10 steps; at step 30 of epoch 2 (global 130) the last checkpoint is step 125.
  ASSERT_TRUE(wait_for(p, "Train Epoch: 2 [480/1600")) << p.output();
  pid_t victim = worker_of(p.pid(), 1);
  ASSERT_GT(victim, 0) << "rank 1's worker not found among ddprun's children";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(p.wait(180s), 0) << p.output();
  EXPECT_NE(p.output().find("worker rank 1 (local 1) was killed by SIGKILL"), std::string::npos) << p.output();
  EXPECT_NE(p.output().find("resumed from " + dir + "/ck/ckpt-"), std::string::npos) << p.output();
  expect_resumed_and_trained_the_rest(p.output(), metrics);
  expect_same_model(baseline, dir + "/killed/model.pt");
}

TEST_F(CifarResume, SigtermCheckpointsExits143AndResumeAutoGivesTheUninterruptedWeights) {
  expect_sigterm_then_resume_gives_the_baseline();
}

TEST_F(CifarResumePowerSGD, SigtermCheckpointsTheHooksStateAndResumeGivesTheUninterruptedWeights) {
  expect_sigterm_then_resume_gives_the_baseline();
}

TEST_F(CifarResumeZero, SigtermCheckpointsTheShardedMomentumAndResumeGivesTheUninterruptedWeights) {
  expect_sigterm_then_resume_gives_the_baseline();
}

TEST_F(CifarResume, TorchrunTrainsToTheSameWeightsAsDdprun) {
  Subprocess p(with_launcher(ddp::testing::torchrun_argv(2, dir + "/torchrun-logs"),
                             args(dir + "/torchrun", dir + "/ck")),
               {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(p.wait(180s), 0) << p.output();
  expect_same_model(baseline, dir + "/torchrun/model.pt");
}

namespace {

// Synthetic CIFAR-10 only: the elastic test compares with no baseline run.
class CifarElastic : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = ddp::testing::make_temp_dir("cifar-elastic");
    data = dir + "/data";
    ASSERT_NO_FATAL_FAILURE(make_synthetic_cifar(data));
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir, data;
};

}  // namespace

// An elastic job's resume, as train_cifar10 does it: 2 ranks stopped (SIGTERM) in the second epoch, resumed
// by 3. The rest of the epoch's order is dealt to the 3 ranks (docs/CHECKPOINTS.md, "Elastic
// resume"), so the resumed attempt trains exactly the images of the epoch that were left, rounded up
// to a multiple of 3 (the padding of the last batch), and the run finishes. Each rank resuming at its
// own start index in the 3-rank list instead trains 3 x (1067 - k) images, far fewer.
TEST_F(CifarElastic, ResumedByMoreRanksTrainsTheRestOfTheEpochOnce) {
  const std::string metrics = dir + "/metrics.jsonl";
  Subprocess first(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "2"},
                                 cifar_args(data, dir + "/model", dir + "/ck")));
  ASSERT_TRUE(wait_for(first, "Train Epoch: 2 [480/1600")) << first.output();  // the log counts epochs from 1
  first.kill(SIGTERM);
  ASSERT_EQ(first.wait(60s), 143) << first.output();
  std::smatch m;
  const std::string out = first.output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(stopping on signal 15 after global step ([0-9]+))"))) << out;
  const int64_t steps_in_epoch = std::stoll(m[1]) - 100;  // epoch 0 had 100 steps of 2 x 16 images
  ASSERT_GT(steps_in_epoch, 0);
  const int64_t left = 3200 - steps_in_epoch * 2 * 16;

  auto args = cifar_args(data, dir + "/model", dir + "/ck");
  args.insert(args.end(), {"--resume", "auto", "--metrics-file", metrics});
  Subprocess second(with_launcher({kDdprun, "--standalone", "--nproc-per-node", "3"}, args));
  ASSERT_EQ(second.wait(180s), 0) << second.output();
  EXPECT_NE(second.output().find("was saved by 2 ranks, this run has 3"), std::string::npos) << second.output();
  EXPECT_EQ(summary_value(metrics, "trained_images"), (left + 2) / 3 * 3)
      << left << " images of epoch 1 were left when the 2 ranks stopped";
  EXPECT_TRUE(fs::exists(dir + "/model/model.pt"));
}

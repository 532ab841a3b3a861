// train_ranzcr end to end: real processes over loopback on synthetic data.
#include "data/ranzcr/auc.h"
#include "data/ranzcr/records.h"
#include "data/ranzcr/synthetic.h"
#include "models/state_dict.h"
#include "support/multiprocess.h"
#include "support/subprocess.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <csignal>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace ddp::data::ranzcr;
using ddp::testing::Subprocess;
namespace fs = std::filesystem;

namespace {

const std::string kTrainer = std::string(DDP_BUILD_DIR) + "/apps/train_ranzcr/train_ranzcr";

// 400 training images of 64x64 from 120 patients, 40 test images; shared by the tests.
const std::string& data_dir() {
  static const std::string dir = [] {
    std::string d = ddp::testing::make_temp_dir("ranzcr-train-data");
    write_synthetic_dataset(SyntheticOptions().dir(d).images(400).test_images(40).size(64).patients(120).seed(1).threads(2));
    return d;
  }();
  return dir;
}

struct TrainerRun {
  std::vector<int> status;
  std::vector<std::string> output;
};

// Starts `world` ranks of train_ranzcr with `args` (plus one compute thread and plain progress lines).
std::vector<std::unique_ptr<Subprocess>> start_trainer(int world, const std::vector<std::string>& args,
                                                       const std::map<std::string, std::string>& extra_env = {}) {
  const int port = ddp::testing::free_port();
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> argv = {kTrainer, "--threads", "1", "--progress", "plain"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = {{"RANK", std::to_string(rank)},
                                              {"WORLD_SIZE", std::to_string(world)},
                                              {"MASTER_ADDR", "127.0.0.1"},
                                              {"MASTER_PORT", std::to_string(port)},
                                              {"LOCAL_RANK", ddp::testing::kUnset},
                                              {"CUDA_VISIBLE_DEVICES", ""}};
    for (auto& [k, v] : extra_env) env[k] = v;
    procs.push_back(std::make_unique<Subprocess>(argv, env));
  }
  return procs;
}

TrainerRun wait_all(std::vector<std::unique_ptr<Subprocess>>& procs, std::chrono::seconds timeout) {
  TrainerRun r;
  for (auto& p : procs) {
    r.status.push_back(p->wait(timeout));
    r.output.push_back(p->output());
  }
  return r;
}

TrainerRun run_trainer(int world, const std::vector<std::string>& args,
                       std::chrono::seconds timeout = std::chrono::seconds(150)) {
  auto procs = start_trainer(world, args);
  return wait_all(procs, timeout);
}

std::string all_output(const TrainerRun& r) {
  std::string s;
  for (size_t i = 0; i < r.output.size(); ++i) s += "---- rank " + std::to_string(i) + " ----\n" + r.output[i];
  return s;
}

std::vector<double> katib_values(const std::string& output, const std::string& name) {
  std::vector<double> values;
  std::regex line("^\\S+Z epoch=\\d+ .*");  // the timestamp, then the pairs
  std::regex value(" " + name + "=([-0-9.eE+]+)");
  std::istringstream in(output);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (std::regex_match(l, line) && std::regex_search(l, m, value)) values.push_back(std::stod(m[1]));
  }
  return values;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// The issue's bar: 2 ranks on synthetic data reach mean AUC >= 0.9 within a few epochs on CPU.
TEST(TrainRanzcr, TwoRanksLearnSyntheticDataAndPredict) {
  const std::string out = ddp::testing::make_temp_dir("ranzcr-train-out");
  const auto t0 = std::chrono::steady_clock::now();
  TrainerRun r = run_trainer(2, {"--data-dir", data_dir(), "--image-size", "64", "--epochs", "3", "--batch-size", "16",
                          "--workers", "1", "--metrics-file", out + "/metrics.jsonl", "--model-dir", out + "/model",
                          "--log-interval", "5"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, (std::vector<int>{0, 0})) << all_output(r);
  auto auc = katib_values(r.output[0], "auc");
  ASSERT_EQ(auc.size(), 3u) << r.output[0];
  EXPECT_GE(auc.back(), 0.9) << r.output[0];
  EXPECT_EQ(katib_values(r.output[0], "train_loss").size(), 3u);
  EXPECT_TRUE(katib_values(r.output[1], "auc").empty()) << "only rank 0 reports";
  RecordProperty("seconds", std::to_string(seconds));
  std::cout << "2 ranks, 3 epochs: " << seconds << " s, AUC per epoch";
  for (double a : auc) std::cout << " " << a;
  std::cout << std::endl;

  // The split the trainer logged: 80/20 by patient (120 patients -> 24 validate).
  EXPECT_NE(r.output[0].find("(96 patients)"), std::string::npos) << r.output[0];
  EXPECT_NE(r.output[0].find("(24 patients)"), std::string::npos) << r.output[0];
  // Metrics file: train records, one eval record per epoch with 11 column AUCs, a summary.
  const std::string metrics = read_all(out + "/metrics.jsonl");
  size_t evals = 0, trains = 0;
  for (size_t p = metrics.find("\"type\":\"eval\""); p != std::string::npos; p = metrics.find("\"type\":\"eval\"", p + 1)) ++evals;
  for (size_t p = metrics.find("\"type\":\"train\""); p != std::string::npos; p = metrics.find("\"type\":\"train\"", p + 1)) ++trains;
  EXPECT_EQ(evals, 3u) << metrics;
  EXPECT_GE(trains, 3u) << metrics;
  EXPECT_NE(metrics.find("\"type\":\"summary\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"column_auc\":["), std::string::npos);
  ASSERT_TRUE(fs::exists(out + "/model/model.pt"));

  // Predict with 2 ranks: every test image once, probabilities, and they score on the test labels.
  TrainerRun p = run_trainer(2, {"--predict", "--data-dir", data_dir(), "--image-size", "64", "--workers", "1",
                          "--weights", out + "/model/model.pt", "--out", out + "/submission.csv"});
  ASSERT_EQ(p.status, (std::vector<int>{0, 0})) << all_output(p);
  auto truth = read_train_csv(data_dir() + "/test_labels.csv");
  std::ifstream sub(out + "/submission.csv");
  std::string line;
  std::getline(sub, line);
  std::string expected_header = "StudyInstanceUID";
  for (const auto& c : label_columns()) expected_header += "," + c;
  EXPECT_EQ(line, expected_header);
  std::map<std::string, std::vector<float>> predicted;
  while (std::getline(sub, line)) {
    auto fields = split_csv_line(line);
    ASSERT_EQ(fields.size(), 12u) << line;
    std::vector<float> probs;
    for (int c = 1; c <= kNumLabels; ++c) {
      probs.push_back(std::stof(fields[static_cast<size_t>(c)]));
      EXPECT_GE(probs.back(), 0.f);
      EXPECT_LE(probs.back(), 1.f);
    }
    EXPECT_TRUE(predicted.emplace(fields[0], probs).second) << "duplicate row " << fields[0];
  }
  ASSERT_EQ(predicted.size(), truth.size());
  std::vector<float> scores, targets;
  for (const auto& rec : truth) {
    ASSERT_TRUE(predicted.count(rec.uid)) << rec.uid;
    scores.insert(scores.end(), predicted[rec.uid].begin(), predicted[rec.uid].end());
    targets.insert(targets.end(), rec.labels.begin(), rec.labels.end());
  }
  EXPECT_GE(column_aucs(scores, targets, kNumLabels).mean, 0.85);
  fs::remove_all(out);
}

// A checkpoint after the first epoch; a second run with more epochs resumes from it.
TEST(TrainRanzcr, ResumesFromCheckpoint) {
  const std::string out = ddp::testing::make_temp_dir("ranzcr-train-ckpt");
  std::vector<std::string> common = {"--data-dir", data_dir(), "--image-size", "32", "--batch-size", "32",
                                     "--workers", "1", "--checkpoint-dir", out + "/ckpt", "--model-dir", out + "/model",
                                     "--val-fraction", "0.1"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  TrainerRun first = run_trainer(2, with({"--epochs", "1"}));
  ASSERT_EQ(first.status, (std::vector<int>{0, 0})) << all_output(first);
  ASSERT_FALSE(fs::is_empty(out + "/ckpt"));
  TrainerRun second = run_trainer(2, with({"--epochs", "2"}));
  ASSERT_EQ(second.status, (std::vector<int>{0, 0})) << all_output(second);
  EXPECT_NE(second.output[0].find("resumed from"), std::string::npos) << second.output[0];
  // Only epoch 2 ran in the second run.
  EXPECT_EQ(katib_values(second.output[0], "train_loss").size(), 1u) << second.output[0];
  EXPECT_NE(second.output[0].find("Z epoch=2 "), std::string::npos) << second.output[0];
  fs::remove_all(out);
}

// SIGTERM (a pod eviction) mid-epoch: every rank finishes its step, rank 0 checkpoints, all exit
// 143 (retryable); the restarted job resumes in the middle of the epoch and finishes it, with the
// weights of an uninterrupted run without `extra` (the stopped and resumed runs add `extra`).
static void expect_sigterm_and_resume_give_the_uninterrupted_weights(const std::vector<std::string>& extra) {
  const std::string out = ddp::testing::make_temp_dir("ranzcr-train-term");
  std::vector<std::string> args = {"--data-dir", data_dir(), "--image-size", "32", "--batch-size", "8",
                                   "--workers", "1", "--checkpoint-dir", out + "/ckpt", "--model-dir", out + "/model",
                                   "--metrics-file", out + "/metrics.jsonl", "--log-interval", "1", "--epochs", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto procs = start_trainer(2, args);
  // Wait until training is under way (a few steps logged), then stop both ranks as Kubernetes would.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (read_all(out + "/metrics.jsonl").find("\"step\":3,") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& p : procs) p->kill(SIGTERM);
  TrainerRun stopped = wait_all(procs, std::chrono::seconds(60));
  ASSERT_EQ(stopped.status, (std::vector<int>{143, 143})) << all_output(stopped);
  EXPECT_NE(stopped.output[0].find(": checkpointed at epoch 0"), std::string::npos) << stopped.output[0];
  ASSERT_FALSE(fs::is_empty(out + "/ckpt"));
  EXPECT_EQ(read_all(out + "/metrics.jsonl").find("\"type\":\"eval\""), std::string::npos) << "stopped before the epoch end";

  TrainerRun resumed = run_trainer(2, args);
  ASSERT_EQ(resumed.status, (std::vector<int>{0, 0})) << all_output(resumed);
  for (const auto& flag : extra)  // the flag took effect (each rank logs its shard)
    if (flag == "--zero")
      EXPECT_NE(resumed.output[1].find("--zero: optimizer state sharded over 2 ranks"), std::string::npos)
          << resumed.output[1];
  std::smatch m;
  const std::string& log = resumed.output[0];
  ASSERT_TRUE(std::regex_search(log, m, std::regex("resumed from .* epoch 0 step ([0-9]+)"))) << log;
  const int from = std::stoi(m[1]);
  EXPECT_GE(from, 3);
  // 329 training images / 2 ranks / batch 8 = 21 steps per epoch: the resumed run did the rest and
  // only the rest (a restart that ignored the checkpoint would log steps 1..21; with the seed fixed
  // its weights would match the reference below all the same).
  std::vector<int> logged, rest;
  const std::regex step_line(R"(Train Epoch: 1 \[([0-9]+)/21 )");
  for (std::sregex_iterator it(log.begin(), log.end(), step_line), end; it != end; ++it) logged.push_back(std::stoi((*it)[1]));
  for (int s = from + 1; s <= 21; ++s) rest.push_back(s);
  EXPECT_EQ(logged, rest) << log;

  // Exact resume: the same weights and validation metrics as a run that was never interrupted
  // (same batches, same augmentation, restored Adam state; one compute thread per rank).
  std::vector<std::string> plain_args = {"--data-dir", data_dir(), "--image-size", "32", "--batch-size", "8",
                                         "--workers", "1", "--model-dir", out + "/reference", "--epochs", "1"};
  TrainerRun reference = run_trainer(2, plain_args);
  ASSERT_EQ(reference.status, (std::vector<int>{0, 0})) << all_output(reference);
  EXPECT_EQ(katib_values(log, "auc"), katib_values(reference.output[0], "auc"));
  EXPECT_EQ(katib_values(log, "eval_loss"), katib_values(reference.output[0], "eval_loss"));
  auto ours = ddp::models::read_state_dict(out + "/model/model.pt");
  auto theirs = ddp::models::read_state_dict(out + "/reference/model.pt");
  ASSERT_EQ(ours.size(), theirs.size());
  for (auto& [name, t] : ours) EXPECT_TRUE(at::equal(t, theirs.at(name))) << name;
  fs::remove_all(out);
}

TEST(TrainRanzcr, SigtermCheckpointsAndTheRestartResumesMidEpoch) {
  expect_sigterm_and_resume_give_the_uninterrupted_weights({});
}

// The same with --zero: the sharded Adam state is consolidated into the checkpoint and split again
// on resume, and the result is the plain uninterrupted run's, bit for bit (dropping the shards'
// state, or ZeRO updating differently from Adam, would change the weights).
TEST(TrainRanzcr, ZeroShardedAdamResumesMidEpochToThePlainRunsWeights) {
  expect_sigterm_and_resume_give_the_uninterrupted_weights({"--zero"});
}

// --pretrained with a file converted from torchvision the documented way, --freeze-backbone: the
// backbone's weights come out of training unchanged, the head does not.
TEST(TrainRanzcr, PretrainedTorchvisionWeightsWithFrozenBackbone) {
  const std::string out = ddp::testing::make_temp_dir("ranzcr-train-pre");
  Subprocess convert({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tools/convert_torchvision_resnet.py", "--arch",
                      "resnet18", "--random-init", "--seed", "2", "--in-channels", "1", "--drop-fc", "--out",
                      out + "/resnet18_1ch.pt"});
  ASSERT_EQ(convert.wait(std::chrono::seconds(120)), 0) << convert.output();
  TrainerRun r = run_trainer(1, {"--data-dir", data_dir(), "--image-size", "32", "--batch-size", "16", "--workers", "1",
                                 "--epochs", "1", "--max-steps", "3", "--pretrained", out + "/resnet18_1ch.pt",
                                 "--freeze-backbone", "--model-dir", out + "/model"});
  ASSERT_EQ(r.status, (std::vector<int>{0})) << all_output(r);
  EXPECT_NE(r.output[0].find("120 tensors loaded, kept initialised: fc.bias, fc.weight"), std::string::npos) << r.output[0];
  auto before = ddp::models::read_state_dict(out + "/resnet18_1ch.pt");
  auto after = ddp::models::read_state_dict(out + "/model/model.pt");
  int64_t frozen = 0;
  for (auto& [name, t] : before) {
    if (name.find("weight") == std::string::npos && name.find("bias") == std::string::npos) continue;  // BN stats move
    EXPECT_TRUE(at::equal(t, after.at(name))) << name << " changed although the backbone is frozen";
    ++frozen;
  }
  EXPECT_EQ(frozen, 20 + 40);  // 20 conv weights + 20 BN weights and biases
  ASSERT_TRUE(after.count("fc.weight"));
  EXPECT_EQ(after.at("fc.weight").sizes(), at::IntArrayRef({11, 512}));
  fs::remove_all(out);
}

// Configuration and data errors: exit 2, with a message naming the flag, column, row or UID.
TEST(TrainRanzcr, BadFlagsAndDataExitTwoWithAReason) {
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::string bad = ddp::testing::make_temp_dir("ranzcr-train-bad");
  {
    // A CSV with a label 2 and a missing image.
    std::string text = read_all(data_dir() + "/train.csv");
    std::ofstream(bad + "/bad_label.csv") << text.substr(0, text.find('\n') + 1)
                                         << "1.2.3,0,0,2,0,0,0,0,0,0,0,0,p1\n";
    std::ofstream(bad + "/missing.csv") << text.substr(0, text.find('\n') + 1) << "1.2.404,0,0,1,0,0,0,0,0,0,0,0,p1\n"
                                        << "1.2.405,0,0,1,0,0,0,0,0,0,0,0,p2\n";
  }
  const std::vector<Case> cases = {
      {{"--data-dir", data_dir(), "--arch", "resnet101"}, "--arch='resnet101'"},
      {{"--data-dir", data_dir(), "--amp", "bf16", "--device", "cpu"}, "--amp bf16 needs a CUDA device"},
      {{"--data-dir", data_dir(), "--schedule", "linear"}, "--schedule='linear'"},
      {{"--data-dir", data_dir(), "--val-fraction", "1.5"}, "--val-fraction"},
      {{"--data-dir", data_dir(), "--folds", "5", "--fold", "5"}, "--fold='5'"},
      {{"--data-dir", data_dir(), "--device", "cuda"}, "--device cuda"},
      {{"--data-dir", data_dir(), "--bogus-flag"}, "bogus-flag"},
      {{"--data-dir", bad + "/nowhere"}, "nowhere/train.csv"},
      {{"--csv", bad + "/bad_label.csv", "--image-dir", data_dir() + "/train"}, "column 'ETT - Normal' has value '2'"},
      {{"--csv", bad + "/missing.csv", "--image-dir", data_dir() + "/train"}, "1.2.404"},
      {{"--data-dir", data_dir(), "--pretrained", bad + "/none.pt"}, "none.pt"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"--epochs", "1", "--image-size", "32", "--model-dir", bad + "/model"});
    TrainerRun r = run_trainer(1, args, std::chrono::seconds(60));
    EXPECT_EQ(r.status[0], 2) << c.fragment << "\n" << r.output[0];
    EXPECT_NE(r.output[0].find(c.fragment), std::string::npos) << "expected '" << c.fragment << "' in:\n" << r.output[0];
  }
  // With --skip-bad-images the missing images are dropped; nothing is left to train on: a clear error.
  TrainerRun skipped = run_trainer(1, {"--csv", bad + "/missing.csv", "--image-dir", data_dir() + "/train", "--skip-bad-images",
                                "--epochs", "1", "--image-size", "32", "--model-dir", bad + "/model"},
                            std::chrono::seconds(60));
  EXPECT_EQ(skipped.status[0], 2) << skipped.output[0];
  EXPECT_NE(skipped.output[0].find("2 of 2 images missing"), std::string::npos) << skipped.output[0];
  fs::remove_all(bad);
}

// --sync-bn end to end: after one step, every BatchNorm's running statistics of 2 ranks x 8 images
// with --sync-bn are those of 1 rank x 16 images (the same 16: the sampler deals rank r the
// permutation's positions r, r+2, ...), and without --sync-bn they are rank 0's 8 images' only.
// The statistics come from the forward of that first step, before any weight changes, so they
// depend only on the initial weights and the batch.
TEST(TrainRanzcr, SyncBnGivesEveryRankTheWholeBatchsStatistics) {
  const std::string out = ddp::testing::make_temp_dir("ranzcr-sync-bn");
  auto run = [&](int world, int batch, bool sync_bn, const std::string& name) {
    std::vector<std::string> args = {"--data-dir", data_dir(), "--image-size", "64", "--epochs", "1", "--batch-size",
                                     std::to_string(batch), "--workers", "0", "--no-augment", "--max-steps", "1",
                                     "--model-dir", out + "/" + name};
    if (sync_bn) args.push_back("--sync-bn");
    TrainerRun r = run_trainer(world, args);
    EXPECT_EQ(r.status, std::vector<int>(static_cast<size_t>(world), 0)) << all_output(r);
    return ddp::models::read_state_dict(out + "/" + name + "/model.pt");
  };
  auto whole = run(1, 16, false, "one-rank");
  auto synced = run(2, 8, true, "sync-bn");
  auto local = run(2, 8, false, "local-bn");
  if (HasFailure()) return;
  auto max_stat_diff = [&](const std::map<std::string, at::Tensor>& a) {
    double d = 0;
    int stats = 0;
    for (const auto& [name, t] : whole) {
      if (name.find("running_") == std::string::npos) continue;
      ++stats;
      d = std::max(d, (a.at(name) - t).abs().max().item<double>());
    }
    EXPECT_EQ(stats, 2 * 20) << "ResNet-18 has 20 BatchNorms";
    return d;
  };
  const double synced_diff = max_stat_diff(synced), local_diff = max_stat_diff(local);
  std::cerr << "largest running-statistic difference from one rank on 16 images: " << synced_diff
            << " with --sync-bn, " << local_diff << " without\n";
  EXPECT_LE(synced_diff, 1e-4) << "--sync-bn: running statistics differ from one rank's on the whole batch";
  EXPECT_GE(local_diff, 1e-3) << "without --sync-bn the statistics should be rank 0's 8 images' only";
  fs::remove_all(out);
}

// ddp::Checkpointer on real models and optimizers, one process (the multi-rank paths run in
// tests/launcher with real worker processes).
#include <ddp/checkpoint.h>
#include <ddp/checkpoint_flags.h>
#include <ddp/errors.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <tuple>
#include <fstream>
#include <signal.h>

#include "ddp/checkpoint/checkpoint_file.h"
#include "support/multiprocess.h"

namespace fs = std::filesystem;
using namespace ddp;

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    bn = register_module("bn", torch::nn::BatchNorm1d(16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 3));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::dropout(torch::relu(bn(fc1(x))), 0.2, is_training()));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Net);

// A few SGD-with-momentum steps that draw from the default generator (dropout) and `gen`.
void train_steps(Net& net, torch::optim::SGD& opt, int steps, at::Generator gen) {
  for (int i = 0; i < steps; ++i) {
    auto x = torch::randn({4, 8}, gen);
    auto y = torch::randint(0, 3, {4}, gen);
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
  }
}

void expect_same_state(Net& a, Net& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  auto ba = a->named_buffers(), bb = b->named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (auto& p : ba) EXPECT_TRUE(torch::equal(p.value(), bb[p.key()])) << p.key();
}

std::string data_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

void flip_byte(const std::string& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5A));
}

// Replaces `path` with a well-framed file (magic, sizes and both CRCs right) around `payload`.
void write_framed(const std::string& path, const std::string& payload) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << ddp::detail::make_checkpoint_header(payload) << payload;
}

// A payload LibTorch parses whose `metadata` holds ints where strings belong (c10::Error on read).
std::string archive_with_int_metadata() {
  torch::serialize::OutputArchive a;
  a.write("format", c10::IValue(std::string("ddp-checkpoint-1")));
  for (const char* k : {"epoch", "step_in_epoch", "global_step", "samples_in_epoch", "world_size"})
    a.write(k, c10::IValue(int64_t{1}));
  c10::Dict<std::string, int64_t> meta;
  meta.insert("test_accuracy", 7);
  a.write("metadata", c10::IValue(meta));
  std::string bytes;
  a.save_to([&](const void* d, size_t n) {
    bytes.append(static_cast<const char*>(d), n);
    return n;
  });
  return bytes;
}

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::manual_seed(1);
    dir = ddp::testing::make_temp_dir("ckpt");
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir;
};

}  // namespace

TEST_F(CheckpointerTest, ResumeContinuesExactlyLikeAnUninterruptedRun) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Checkpointer ckpt(CheckpointOptions().dir(dir));
  ckpt.track_generator("data", gen);
  train_steps(net, opt, 3, gen);
  TrainingProgress progress;
  progress.epoch = 2;
  progress.step_in_epoch = 3;
  progress.global_step = 23;
  progress.samples_in_epoch = 12;
  std::string path = ckpt.save(*net, &opt, progress, {{"note", "mid-epoch"}, {"best_acc", "0.5"}});
  EXPECT_EQ(path, dir + "/ckpt-000000000023.ddpckpt");

  // The uninterrupted continuation.
  train_steps(net, opt, 4, gen);
  auto expected_draw = torch::rand({3});

  // A "restarted process": different weights, fresh optimizer, generators moved on.
  torch::manual_seed(99);
  at::Generator gen2 = at::detail::createCPUGenerator(1234);
  Net net2;
  torch::optim::SGD opt2(net2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Checkpointer ckpt2(CheckpointOptions().dir(dir));
  ckpt2.track_generator("data", gen2);
  auto info = ckpt2.resume("auto", *net2, &opt2);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->path, path);
  EXPECT_EQ(info->progress.epoch, 2);
  EXPECT_EQ(info->progress.step_in_epoch, 3);
  EXPECT_EQ(info->progress.global_step, 23);
  EXPECT_EQ(info->progress.samples_in_epoch, 12);
  EXPECT_EQ(info->metadata.at("note"), "mid-epoch");
  EXPECT_EQ(info->metadata.at("best_acc"), "0.5");
  EXPECT_EQ(info->world_size, 1);
  train_steps(net2, opt2, 4, gen2);
  // Bit-identical: momentum buffers, dropout masks (default generator) and data (tracked generator).
  expect_same_state(net, net2);
  EXPECT_TRUE(torch::equal(torch::rand({3}), expected_draw));
}

TEST_F(CheckpointerTest, KeepsTheNewestKAndNamesSortByStep) {
  Net net;
  Checkpointer ckpt(CheckpointOptions().dir(dir + "/nested/ckpts").keep(2));
  TrainingProgress p;
  for (int i = 0; i < 5; ++i) {
    p.step_done(4);
    ckpt.save(*net, nullptr, p);
  }
  auto files = list_checkpoints(dir + "/nested/ckpts");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[0]).filename(), "ckpt-000000000004.ddpckpt");
  EXPECT_EQ(fs::path(files[1]).filename(), "ckpt-000000000005.ddpckpt");
  for (auto& e : fs::directory_iterator(dir + "/nested/ckpts"))
    EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();
}

TEST_F(CheckpointerTest, CorruptNewestFallsBackToThePreviousAndIsRetired) {
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Checkpointer ckpt(CheckpointOptions().dir(dir).keep(0));
  TrainingProgress p;
  p.global_step = 10;
  std::string older = ckpt.save(*net, &opt, p);
  auto weights_at_10 = net->fc1->weight.clone();
  {
    torch::NoGradGuard g;
    net->fc1->weight.add_(1.0);
  }
  p.global_step = 20;
  std::string newer = ckpt.save(*net, &opt, p);
  flip_byte(newer, static_cast<std::streamoff>(fs::file_size(newer) / 2));

  EXPECT_EQ(find_latest_valid_checkpoint(dir), older);
  EXPECT_NE(data_error([&] { read_checkpoint_info(newer); }).find("checksum mismatch"), std::string::npos);

  Net net2;
  torch::optim::SGD opt2(net2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto info = Checkpointer(CheckpointOptions().dir(dir)).resume("auto", *net2, &opt2);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->path, older);
  EXPECT_EQ(info->progress.global_step, 10);
  EXPECT_TRUE(torch::equal(net2->fc1->weight, weights_at_10));
  // The corrupt newer file no longer competes with this run's future checkpoints.
  EXPECT_FALSE(fs::exists(newer));
  EXPECT_TRUE(fs::exists(newer + ".stale"));
}

// The CRC is fine but the payload is not a usable archive: garbage bytes, an archive whose fields
// have the wrong types, an archive without the model. Each is skipped like a CRC failure (logged,
// named, renamed *.stale) and the previous checkpoint is used, instead of a LibTorch error that
// aborts the resume.
TEST_F(CheckpointerTest, PayloadThatDoesNotParseFallsBackToThePrevious) {
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Checkpointer ckpt(CheckpointOptions().dir(dir).keep(0));
  TrainingProgress p;
  p.global_step = 10;
  std::string older = ckpt.save(*net, &opt, p);
  auto weights_at_10 = net->fc1->weight.clone();
  std::string good_payload;
  {
    std::ifstream in(older, std::ios::binary);
    good_payload.assign(std::istreambuf_iterator<char>(in), {});
    good_payload = good_payload.substr(ddp::detail::kCheckpointHeaderSize);
  }
  // A valid archive without model, optimizer and rng: everything read_checkpoint_info reads is there,
  // `key` (when given) replaced by `value`.
  auto info_only = [&](const std::string& key = "", int64_t value = 0) {
    std::string bytes;
    torch::serialize::InputArchive in;
    in.load_from(good_payload.data(), good_payload.size());
    torch::serialize::OutputArchive out;
    for (const char* k : {"format", "epoch", "step_in_epoch", "global_step", "samples_in_epoch", "world_size", "metadata"}) {
      c10::IValue v;
      EXPECT_TRUE(in.try_read(k, v)) << k;
      out.write(k, k == key ? c10::IValue(value) : v);
    }
    out.save_to([&](const void* d, size_t n) {
      bytes.append(static_cast<const char*>(d), n);
      return n;
    });
    return bytes;
  };
  const std::string no_model = info_only();
  // What is wrong, and what the error must say (the last two are read before the model is looked for).
  const std::vector<std::tuple<std::string, std::string, std::string>> bad_payloads = {
      {"garbage", std::string(4096, '\x5a'), "payload"},
      {"half a zip", good_payload.substr(0, good_payload.size() / 2), "payload"},
      {"int metadata", archive_with_int_metadata(), "payload"},
      {"no model", no_model, "payload"},
      {"negative samples_in_epoch", info_only("samples_in_epoch", -8), "payload's 'samples_in_epoch' is negative (-8)"},
      {"world_size 0", info_only("world_size", 0), "payload's 'world_size' is 0, not a number of ranks"},
  };
  for (const auto& [what, payload, says] : bad_payloads) {
    SCOPED_TRACE(what);
    fs::remove(dir + "/" + checkpoint_file_name(20) + ".stale");
    p.global_step = 20;
    std::string newer = ckpt.save(*net, &opt, p);
    write_framed(newer, payload);
    std::string msg = data_error([&] { read_checkpoint_info(newer); });
    EXPECT_NE(msg.find(newer), std::string::npos) << msg;
    EXPECT_NE(msg.find(says), std::string::npos) << msg;
    EXPECT_EQ(find_latest_valid_checkpoint(dir), older);

    Net net2;
    torch::optim::SGD opt2(net2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    std::optional<CheckpointInfo> info;
    ASSERT_NO_THROW(info = Checkpointer(CheckpointOptions().dir(dir)).resume("auto", *net2, &opt2));
    ASSERT_TRUE(info);
    EXPECT_EQ(info->path, older);
    EXPECT_TRUE(torch::equal(net2->fc1->weight, weights_at_10));
    EXPECT_FALSE(fs::exists(newer));
    EXPECT_TRUE(fs::exists(newer + ".stale"));
  }
}

// Retired (*.stale) files are pruned like checkpoints: the newest `keep` of them stay.
TEST_F(CheckpointerTest, StaleFilesArePrunedToTheNewestK) {
  Net net;
  TrainingProgress p;
  for (int64_t step : {1, 2, 3, 4, 5}) {
    p.global_step = step;
    Checkpointer(CheckpointOptions().dir(dir).keep(0)).save(*net, nullptr, p);
  }
  // A fresh run retires all five, then saves twice with keep 2.
  Checkpointer ckpt(CheckpointOptions().dir(dir).keep(2));
  EXPECT_FALSE(ckpt.resume("none", *net, nullptr));
  for (int64_t step : {1, 2}) {
    p.global_step = step;
    ckpt.save(*net, nullptr, p);
  }
  std::vector<std::string> stale;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".stale") stale.push_back(e.path().filename().string());
  std::sort(stale.begin(), stale.end());
  EXPECT_EQ(stale, (std::vector<std::string>{checkpoint_file_name(4) + ".stale", checkpoint_file_name(5) + ".stale"}));
  EXPECT_EQ(list_checkpoints(dir).size(), 2u);
  // keep 0 keeps every stale file too.
  for (int64_t step : {6, 7, 8}) {
    p.global_step = step;
    Checkpointer(CheckpointOptions().dir(dir).keep(0)).save(*net, nullptr, p);
  }
  Checkpointer(CheckpointOptions().dir(dir).keep(0)).resume("none", *net, nullptr);
  p.global_step = 1;
  Checkpointer(CheckpointOptions().dir(dir).keep(0)).save(*net, nullptr, p);
  size_t stale_now = 0;
  for (const auto& e : fs::directory_iterator(dir)) stale_now += e.path().extension() == ".stale";
  EXPECT_EQ(stale_now, 7u);  // 4 and 5 from before, 1, 2, 6, 7 and 8 retired now
}

TEST_F(CheckpointerTest, TruncatedAndAllCorruptAreDataErrors) {
  Net net;
  Checkpointer ckpt(CheckpointOptions().dir(dir).keep(0));
  TrainingProgress p;
  p.global_step = 1;
  std::string a = ckpt.save(*net, nullptr, p);
  p.global_step = 2;
  std::string b = ckpt.save(*net, nullptr, p);
  fs::resize_file(b, fs::file_size(b) - 100);
  flip_byte(a, 40);
  std::string msg = data_error([&] { find_latest_valid_checkpoint(dir); });
  EXPECT_NE(msg.find("none of the 2 checkpoints"), std::string::npos) << msg;
  EXPECT_NE(msg.find(b + ": truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find(a + ": payload checksum mismatch"), std::string::npos) << msg;
  Net net2;
  EXPECT_NE(data_error([&] { Checkpointer(CheckpointOptions().dir(dir)).resume("auto", *net2, nullptr); }), "");
  // An explicit file that is unusable, or missing.
  msg = data_error([&] { Checkpointer(CheckpointOptions().dir(dir)).resume(b, *net2, nullptr); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  msg = data_error([&] { Checkpointer(CheckpointOptions()).resume(dir + "/nope.ddpckpt", *net2, nullptr); });
  EXPECT_NE(msg.find("nope.ddpckpt: file not found"), std::string::npos) << msg;
}

TEST_F(CheckpointerTest, FreshStartWhenThereIsNothingToResume) {
  Net net;
  EXPECT_FALSE(Checkpointer(CheckpointOptions().dir(dir + "/missing")).resume("auto", *net, nullptr));
  EXPECT_FALSE(Checkpointer(CheckpointOptions()).resume("auto", *net, nullptr));
  EXPECT_EQ(Checkpointer(CheckpointOptions()).save(*net, nullptr, TrainingProgress()), "");
  // --resume none ignores (and retires) what is there.
  TrainingProgress p;
  p.global_step = 3;
  std::string old = Checkpointer(CheckpointOptions().dir(dir)).save(*net, nullptr, p);
  EXPECT_FALSE(Checkpointer(CheckpointOptions().dir(dir)).resume("none", *net, nullptr));
  EXPECT_TRUE(list_checkpoints(dir).empty());
  EXPECT_TRUE(fs::exists(old + ".stale"));
}

TEST_F(CheckpointerTest, AModelThatDoesNotMatchIsNamed) {
  Net net;
  TrainingProgress p;
  std::string path = Checkpointer(CheckpointOptions().dir(dir)).save(*net, nullptr, p);
  auto other = torch::nn::Sequential(torch::nn::Linear(8, 16));
  std::string msg = data_error([&] { Checkpointer(CheckpointOptions()).load(path, *other, nullptr); });
  EXPECT_NE(msg.find("'0.weight'"), std::string::npos) << msg;
  struct Wider : torch::nn::Module {
    Wider() {
      register_module("fc1", torch::nn::Linear(8, 17));
      register_module("bn", torch::nn::BatchNorm1d(16));
      register_module("fc2", torch::nn::Linear(16, 3));
    }
  } wider;
  msg = data_error([&] { Checkpointer(CheckpointOptions()).load(path, wider, nullptr); });
  EXPECT_NE(msg.find("'fc1.weight' is [16, 8] Float, the model's is [17, 8] Float"), std::string::npos) << msg;
}

TEST_F(CheckpointerTest, DueEveryNSteps) {
  Checkpointer c(CheckpointOptions().dir(dir).every(5));
  TrainingProgress p;
  std::vector<int64_t> due;
  for (int i = 0; i < 12; ++i) {
    p.step_done(1);
    if (c.due(p)) due.push_back(p.global_step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{5, 10}));
  EXPECT_FALSE(Checkpointer(CheckpointOptions().dir(dir)).due(p));
}

// A writer killed at random moments while replacing a checkpoint: the final name always holds a
// complete, verifying checkpoint (the old one or the new one), never a torn file.
DDP_TEST_WORKER(checkpoint_writer_loop) {
  auto model = torch::nn::Linear(512, 1024);  // ~2 MiB per checkpoint
  Checkpointer ckpt(CheckpointOptions().dir(ddp::testing::env_or("CKPT_DIR", "")).keep(1));
  TrainingProgress p;
  p.global_step = 7;
  for (int i = 0;; ++i) {
    {
      torch::NoGradGuard g;
      model->weight.fill_(static_cast<float>(i));
    }
    ckpt.save(*model, nullptr, p);
    std::cout << "saved " << i << std::endl;
  }
}

TEST_F(CheckpointerTest, KilledWriterNeverLeavesATornCheckpoint) {
  for (int round = 0; round < 6; ++round) {
    ddp::testing::Subprocess writer({ddp::testing::self_exe()},
                                    {{"DDP_TEST_WORKER", "checkpoint_writer_loop"}, {"CKPT_DIR", dir}});
    // Wait for the first complete save, then kill at a moment that moves with the round.
    for (int i = 0; i < 400 && writer.output().find("saved 0") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(7 * round + 3));
    writer.kill(SIGKILL);
    writer.wait();
    auto files = list_checkpoints(dir);
    ASSERT_EQ(files.size(), 1u) << writer.output();
    EXPECT_NO_THROW(read_checkpoint_info(files[0]));
    // resume() clears the dead writer's temporary file.
    auto model = torch::nn::Linear(512, 1024);
    EXPECT_TRUE(Checkpointer(CheckpointOptions().dir(dir)).resume("auto", *model, nullptr));
    for (auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

TEST(CheckpointFlags, ParsedAndValidated) {
  cxxopts::Options options("trainer");
  CheckpointFlags::add_to(options);
  const char* argv[] = {"trainer", "--checkpoint-dir", "/ck", "--checkpoint-every", "50", "--resume", "none"};
  auto parsed = options.parse(7, argv);
  auto flags = CheckpointFlags::from(parsed);
  EXPECT_EQ(flags.dir, "/ck");
  EXPECT_EQ(flags.every, 50);
  EXPECT_EQ(flags.keep, 3);
  EXPECT_EQ(flags.resume, "none");
  EXPECT_EQ(flags.options().dir(), "/ck");
  EXPECT_EQ(flags.options().every(), 50);

  const char* defaults_argv[] = {"trainer"};
  auto defaults = CheckpointFlags::from(options.parse(1, defaults_argv));
  EXPECT_EQ(defaults.resume, "auto");
  EXPECT_EQ(defaults.dir, "");
  EXPECT_EQ(defaults.every, 0);

  CheckpointFlags f;
  EXPECT_FALSE(f.set("epochs", "3"));
  for (auto [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"checkpoint-every", "-1"}, {"checkpoint-every", "ten"}, {"checkpoint-keep", "2x"},
           {"checkpoint-every", ""}, {"resume", ""}}) {
    try {
      f.set(flag, value);
      ADD_FAILURE() << flag << "=" << value << " accepted";
    } catch (const ConfigError& e) {
      if (!value.empty()) EXPECT_NE(std::string(e.what()).find("--" + flag + "='" + value + "'"), std::string::npos) << e.what();
    }
  }
}

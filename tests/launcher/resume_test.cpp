// Exact resume under real failures: ddp_test_trainer (tests/launcher/test_trainer.cpp) run by ddprun
// (and by PyTorch's torchrun), interrupted by kill -9 or SIGTERM, must end with weights bit-identical
// to an uninterrupted run with the same seed.
//
// Equal weights alone would not show that the checkpoint was used: training is fully determined by
// the seed, so a restart that ignored the checkpoint and trained from step 0 ends with the same bytes.
// So every test also reads the steps each attempt ran from the trainer's log: the attempt after the
// restart must start right after the checkpointed step (> 0) and run exactly the remaining steps.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <ddp/checkpoint.h>

#include "launcher_binaries.h"
#include "support/multiprocess.h"
#include "support/torchrun.h"

namespace fs = std::filesystem;
using ddp::testing::Subprocess;
using namespace std::chrono_literals;

namespace {

// 256 samples, 2 ranks x batch 8: 16 steps per epoch, 48 in all.
constexpr int64_t kTotalSteps = 48;
std::vector<std::string> trainer_args(const std::string& ckpt_dir, const std::string& out,
                                      std::vector<std::string> extra = {}, int checkpoint_every = 5) {
  std::vector<std::string> a = {kTrainer, "--epochs", "3", "--samples", "256", "--batch-size", "8", "--seed", "5",
                                "--checkpoint-dir", ckpt_dir, "--checkpoint-every", std::to_string(checkpoint_every),
                                "--out", out};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> ddprun(std::vector<std::string> flags, const std::vector<std::string>& program) {
  std::vector<std::string> a = {kDdprun, "--monitor-interval", "0.05"};
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), program.begin(), program.end());
  return a;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool wait_for(Subprocess& p, const std::string& text, std::chrono::seconds limit = 60s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p.output().find(text) != std::string::npos) return true;
    if (!p.running()) return false;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// The pid a worker printed ("[<rank>]: pid <n> rank ...").
pid_t worker_pid(const std::string& output, int rank) {
  std::smatch m;
  std::regex re("\\[" + std::to_string(rank) + "\\]: pid ([0-9]+) rank");
  if (!std::regex_search(output, m, re)) return -1;
  return static_cast<pid_t>(std::stol(m[1]));
}

// The global steps each attempt of one rank ran, from its lines in a launcher's output: `prefix` then
// "pid N rank R of W attempt A" (an attempt starts) or "epoch E step S global G loss L" (a step).
std::vector<std::vector<int64_t>> steps_per_attempt(const std::string& output, const std::string& prefix) {
  std::vector<std::vector<int64_t>> attempts;
  std::istringstream lines(output);
  const std::regex step(R"(epoch [0-9]+ step [0-9]+ global ([0-9]+) loss)");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::string rest = line.substr(prefix.size());
    std::smatch m;
    if (rest.rfind("pid ", 0) == 0) {
      attempts.emplace_back();
    } else if (std::regex_search(rest, m, step) && !attempts.empty()) {
      attempts.back().push_back(std::stoll(m[1]));
    }
  }
  return attempts;
}

// The steps after `checkpoint_step`, up to the end: what a resumed attempt must run, and only that.
std::vector<int64_t> steps_after(int64_t checkpoint_step) {
  std::vector<int64_t> v;
  for (int64_t s = checkpoint_step + 1; s <= kTotalSteps; ++s) v.push_back(s);
  return v;
}

// The step of the checkpoint a run says it resumed from ("resumed from .../ckpt-<step>.ddpckpt"), or -1.
int64_t resumed_step(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(resumed from \S*ckpt-([0-9]+)\.ddpckpt)"))) return -1;
  return std::stoll(m[1]);
}

// The last attempt of `prefix`'s rank resumed from a checkpoint after step 0 and ran exactly the
// steps after it; `attempts` is how many attempts that rank's output should show.
void expect_resumed_and_ran_the_rest(const std::string& output, const std::string& prefix, size_t attempts) {
  const int64_t from = resumed_step(output);
  EXPECT_GT(from, 0) << "no resume from a checkpoint after step 0:\n" << output;
  auto ran = steps_per_attempt(output, prefix);
  ASSERT_EQ(ran.size(), attempts) << output;
  EXPECT_EQ(ran.back(), steps_after(from)) << "the resumed attempt must run exactly steps " << from + 1 << ".."
                                           << kTotalSteps << " (a restart that ignored the checkpoint runs 1.."
                                           << kTotalSteps << ")";
}

class Resume : public ::testing::Test {
 protected:
  void SetUp() override { dir = ddp::testing::make_temp_dir("resume"); }
  void TearDown() override { fs::remove_all(dir); }

  // The uninterrupted run every interrupted one must match.
  std::string baseline() {
    std::string out = dir + "/baseline.bin";
    Subprocess p(ddprun({"--standalone", "--nproc-per-node", "2"}, trainer_args(dir + "/ck-baseline", out)));
    EXPECT_EQ(p.wait(120s), 0) << p.output();
    std::string weights = slurp(out);
    EXPECT_EQ(weights.size(), (16 * 32 + 32 + 32 * 4 + 4) * sizeof(float));
    return weights;
  }
  std::string dir;
};

}  // namespace

TEST_F(Resume, KillNineMidEpochUnderDdprunEndsBitIdentical) {
  std::string expected = baseline();
  std::string out = dir + "/killed.bin";
  Subprocess p(ddprun({"--standalone", "--nproc-per-node", "2", "--max-restarts", "2"},
                      trainer_args(dir + "/ck", out, {"--step-sleep-ms", "40"})));
  // Mid-epoch 1, between two checkpoints (steps 20 and 25): steps 21.. are redone after the restart.
  ASSERT_TRUE(wait_for(p, "[1]: epoch 1 step 7 ")) << p.output();
  pid_t victim = worker_pid(p.output(), 1);
  ASSERT_GT(victim, 0) << p.output();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(p.wait(120s), 0) << p.output();
  EXPECT_NE(p.output().find("worker rank 1 (local 1) was killed by SIGKILL (exit 137): retryable"), std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("resumed from " + dir + "/ck/ckpt-000000000020.ddpckpt"), std::string::npos) << p.output();
  expect_resumed_and_ran_the_rest(p.output(), "[0]: ", 2);
  expect_resumed_and_ran_the_rest(p.output(), "[1]: ", 2);
  EXPECT_EQ(slurp(out), expected) << "weights differ from the uninterrupted run";
}

TEST_F(Resume, SigtermCheckpointsAndAResumedRunEndsBitIdentical) {
  std::string expected = baseline();
  std::string out = dir + "/stopped.bin";
  Subprocess first(ddprun({"--standalone", "--nproc-per-node", "2", "--grace-period", "20"},
                          trainer_args(dir + "/ck", out, {"--step-sleep-ms", "40"})));
  ASSERT_TRUE(wait_for(first, "[0]: epoch 1 step 3 ")) << first.output();
  auto sent = std::chrono::steady_clock::now();
  first.kill(SIGTERM);
  EXPECT_EQ(first.wait(60s), 143) << first.output();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 20s);  // well within the grace period
  EXPECT_FALSE(fs::exists(out));
  // Both ranks stopped after the same step, and that step's checkpoint is there.
  std::smatch m;
  std::string output = first.output();
  ASSERT_TRUE(std::regex_search(output, m, std::regex("\\[0\\]: stopping after global step ([0-9]+)"))) << output;
  int64_t step = std::stoll(m[1]);
  EXPECT_NE(output.find("[1]: stopping after global step " + std::to_string(step) + " "), std::string::npos) << output;
  EXPECT_TRUE(fs::exists(dir + "/ck/" + ddp::checkpoint_file_name(step))) << output;
  EXPECT_NE(step % 5, 0) << "the stop should land between periodic checkpoints for this test to mean much";

  Subprocess second(ddprun({"--standalone", "--nproc-per-node", "2"}, trainer_args(dir + "/ck", out, {"--resume", "auto"})));
  ASSERT_EQ(second.wait(120s), 0) << second.output();
  EXPECT_NE(second.output().find("resumed from " + dir + "/ck/" + ddp::checkpoint_file_name(step)), std::string::npos)
      << second.output();
  EXPECT_EQ(resumed_step(second.output()), step);
  expect_resumed_and_ran_the_rest(second.output(), "[0]: ", 1);
  expect_resumed_and_ran_the_rest(second.output(), "[1]: ", 1);
  EXPECT_EQ(slurp(out), expected) << "weights differ from the uninterrupted run";
}

// Probe (issue 12): ddprun SIGKILLed mid-run. Its workers get SIGTERM (parent-death signal), but the
// pipes that were their stdout and stderr have no reader any more: with SIGPIPE's default action the
// first line they printed after the signal killed them (141) before their checkpoint. Now they
// ignore SIGPIPE (install_stop_handlers), checkpoint, exit 143, and a resumed run ends bit-identical.
TEST_F(Resume, DdprunKilledHardStillLetsItsWorkersCheckpoint) {
  std::string expected = baseline();
  std::string out = dir + "/orphaned.bin";
  // The orphaned workers become our children, so their exit codes can be read.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  // No periodic checkpoints in this run: the ones there afterwards are the end of epoch 0 (global
  // step 16) and the one the workers wrote when they stopped, later in epoch 1, wherever the stop
  // fell (with periodic ones, a stop on a multiple of 5 could not be told from them).
  Subprocess first(ddprun({"--standalone", "--nproc-per-node", "2"},
                          trainer_args(dir + "/ck", out, {"--step-sleep-ms", "40"}, /*checkpoint_every=*/1000)));
  ASSERT_TRUE(wait_for(first, "[0]: epoch 1 step 3 ")) << first.output();
  const pid_t workers[] = {worker_pid(first.output(), 0), worker_pid(first.output(), 1)};
  ASSERT_GT(workers[0], 0);
  ASSERT_GT(workers[1], 0);
  first.kill(SIGKILL);
  EXPECT_EQ(first.wait(30s), 128 + SIGKILL);
  for (pid_t w : workers) {
    int status = 0;
    pid_t r = 0;
    for (int i = 0; i < 3000 && (r = ::waitpid(w, &status, WNOHANG)) == 0; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(r, w) << "worker " << w << " did not end within 30 s of its launcher";
    EXPECT_TRUE(WIFEXITED(status)) << "worker " << w << " was killed by signal " << WTERMSIG(status);
    if (WIFEXITED(status)) EXPECT_EQ(WEXITSTATUS(status), 143) << "worker " << w;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_FALSE(fs::exists(out));

  Subprocess second(ddprun({"--standalone", "--nproc-per-node", "2"}, trainer_args(dir + "/ck", out, {"--resume", "auto"})));
  ASSERT_EQ(second.wait(120s), 0) << second.output();
  const int64_t step = resumed_step(second.output());
  EXPECT_GT(step, kTotalSteps / 3) << "resumed from the end of epoch 0, not from the checkpoint written at the stop:\n"
                                   << second.output() << "\n---- the run ddprun was killed in ----\n" << first.output();
  expect_resumed_and_ran_the_rest(second.output(), "[0]: ", 1);
  expect_resumed_and_ran_the_rest(second.output(), "[1]: ", 1);
  EXPECT_EQ(slurp(out), expected) << "weights differ from the uninterrupted run";
}

TEST_F(Resume, TwoNodesRestartTogetherAfterAWorkerOnNode1IsKilled) {
  std::string expected = baseline();  // 2 ranks on one node; here 1 rank on each of 2 nodes
  std::string out = dir + "/two-nodes.bin";
  int port = ddp::testing::free_port();
  auto node = [&](int rank) {
    return std::make_unique<Subprocess>(
        ddprun({"--nnodes", "2", "--node-rank", std::to_string(rank), "--master-addr", "127.0.0.1", "--master-port",
                std::to_string(port), "--nproc-per-node", "1", "--max-restarts", "2", "--join-timeout", "60"},
               trainer_args(dir + "/ck", out, {"--step-sleep-ms", "40"})));
  };
  auto node0 = node(0);
  auto node1 = node(1);
  ASSERT_TRUE(wait_for(*node1, "[1]: epoch 0 step 12 ")) << node1->output();
  pid_t victim = worker_pid(node1->output(), 1);
  ASSERT_GT(victim, 0) << node1->output();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(node1->wait(120s), 0) << node1->output();
  EXPECT_EQ(node0->wait(120s), 0) << node0->output();
  EXPECT_NE(node0->output().find("another node moved the job to attempt 1"), std::string::npos) << node0->output();
  EXPECT_NE(node0->output().find("[0]: pid"), node0->output().rfind("[0]: pid")) << "node 0's worker was not restarted";
  expect_resumed_and_ran_the_rest(node0->output(), "[0]: ", 2);
  expect_resumed_and_ran_the_rest(node1->output(), "[1]: ", 2);
  EXPECT_EQ(slurp(out), expected) << "weights differ from the uninterrupted run";
}

// The same kill -9 under PyTorch's torchrun (its agent hosts the store and restarts every worker):
// the restarted workers resume from the checkpoint and end with ddprun's uninterrupted weights.
TEST_F(Resume, KillNineUnderTorchrunResumesToTheUninterruptedWeights) {
  std::string expected = baseline();
  std::string out = dir + "/torchrun.bin";
  std::vector<std::string> argv =
      ddp::testing::torchrun_argv(2, dir + "/torchrun-logs", {"--max_restarts", "1", "--monitor_interval", "0.1"});
  auto program = trainer_args(dir + "/ck", out, {"--step-sleep-ms", "40"});
  argv.insert(argv.end(), program.begin(), program.end());
  Subprocess p(argv, {{"OMP_NUM_THREADS", "1"}});
  ASSERT_TRUE(wait_for(p, "[default1]:epoch 1 step 7 ", 120s)) << p.output();
  std::smatch m;
  std::string before = p.output();
  ASSERT_TRUE(std::regex_search(before, m, std::regex("pid ([0-9]+) rank 1 of 2 attempt 0"))) << before;
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(m[1])), SIGKILL), 0)
      << "rank 1 (pid " << m[1] << ") is gone already: " << std::strerror(errno) << "\n" << before;
  ASSERT_EQ(p.wait(180s), 0) << p.output();
  EXPECT_NE(p.output().find("rank 1 of 2 attempt 1"), std::string::npos) << "not restarted:\n" << p.output();
  expect_resumed_and_ran_the_rest(p.output(), "[default0]:", 2);
  expect_resumed_and_ran_the_rest(p.output(), "[default1]:", 2);
  EXPECT_EQ(slurp(out), expected) << "weights differ from ddprun's uninterrupted run";
}

// A broken --resume file is a permanent error (exit 2): with --restart-on retryable ddprun ends the
// job at once (by default, as torchrun, it would first retry --max-restarts times).
TEST_F(Resume, AnUnusableResumeFileIsPermanentAndNotRestarted) {
  std::string bad = dir + "/ckpt-000000000010.ddpckpt";
  std::ofstream(bad) << "DDPCKPT1 but nothing else";
  Subprocess p(ddprun({"--standalone", "--nproc-per-node", "2", "--max-restarts", "3", "--restart-on", "retryable"},
                      trainer_args(dir + "/ck", dir + "/w.bin", {"--resume", bad})));
  EXPECT_EQ(p.wait(120s), 2) << p.output();
  EXPECT_NE(p.output().find(bad + ": truncated"), std::string::npos) << p.output();
  EXPECT_EQ(p.output().find("attempt 1"), std::string::npos) << p.output();
}

namespace {

// One line of the trainer's --record file.
struct TrainedStep {
  int64_t attempt, global, epoch, rank, world;
  std::vector<int64_t> samples;
};

std::vector<TrainedStep> read_record(const std::string& path) {
  std::vector<TrainedStep> steps;
  std::ifstream in(path);
  const std::regex re(R"(attempt ([0-9]+) global ([0-9]+) epoch ([0-9]+) rank ([0-9]+) world ([0-9]+) samples ([0-9,]+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      ADD_FAILURE() << "bad record line: " << line;
      continue;
    }
    TrainedStep s{std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3]), std::stoll(m[4]), std::stoll(m[5]), {}};
    std::istringstream list(m[6]);
    for (std::string i; std::getline(list, i, ',');) s.samples.push_back(std::stoll(i));
    steps.push_back(std::move(s));
  }
  return steps;
}

// Polls the record until `done` says so (or 90 s pass).
bool wait_for_record(const std::string& path, const std::function<bool(const std::vector<TrainedStep>&)>& done) {
  for (int i = 0; i < 9000; ++i) {
    if (done(read_record(path))) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

// An elastic job (issue 26): --nnodes 2:3 over the c10d rendezvous, three nodes of one worker each,
// torchrun's command line on every node. A node is lost mid-epoch (its ddprun and its worker killed
// -9, as when a machine goes away): the two others restart without it, at world size 2, from the
// last checkpoint. Then a new node comes: the two re-form the group with it at world size 3 (a
// membership change, not counted as a restart), and the job finishes.
//
// The trainer records the samples of every step. The steps that count are each attempt's steps up to
// the checkpoint the next attempt resumed from (the ones after it died with the node and were done
// again). Of those, every epoch must train each of its samples exactly once, but for the padding of
// the world that ended the epoch (at most world - 1 repeats, as an uninterrupted run at that size
// has). Resuming each rank at its own start index in the new world's shard instead (what ddp did
// before) skips samples and repeats others, and fails.
TEST_F(Resume, AnElasticJobLosesANodeThenGainsOneAndTrainsEverySampleOfTheEpochOnce) {
  const std::string record = dir + "/record", out = dir + "/elastic.bin";
  const int64_t samples = 120;
  int port = ddp::testing::free_port();
  auto node = [&] {
    return std::make_unique<Subprocess>(
        ddprun({"--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                "127.0.0.1:" + std::to_string(port), "--rdzv-id", "elastic", "--rdzv-conf", "last_call_timeout=3",
                "--max-restarts", "3", "--join-timeout", "60"},
               {kTrainer, "--epochs", "2", "--samples", std::to_string(samples), "--batch-size", "1", "--seed", "5",
                "--checkpoint-dir", dir + "/ck", "--checkpoint-every", "1", "--step-sleep-ms", "30", "--out", out,
                "--record", record}));
  };
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(node());
  ASSERT_TRUE(wait_for_record(record, [](const std::vector<TrainedStep>& s) { return s.size() >= 30; }))
      << nodes[0]->output();
  // Lose a node that does not host the store (losing that one ends the job, as in torch).
  size_t lost = nodes.size();
  for (size_t i = 0; i < nodes.size() && lost == nodes.size(); ++i)
    if (nodes[i]->output().find("store listening on port") == std::string::npos) lost = i;
  ASSERT_LT(lost, nodes.size());
  const std::string lost_output = nodes[lost]->output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(lost_output, m, std::regex(R"(\[([0-9]+)\]: pid ([0-9]+) rank)"))) << lost_output;
  nodes[lost]->kill(SIGKILL);
  ::kill(static_cast<pid_t>(std::stol(m[2])), SIGKILL);
  EXPECT_EQ(nodes[lost]->wait(30s), 128 + SIGKILL);
  // The two others go on at world size 2; once they have, a fourth node comes.
  ASSERT_TRUE(wait_for_record(record, [](const std::vector<TrainedStep>& s) {
    return std::count_if(s.begin(), s.end(), [](const TrainedStep& t) { return t.world == 2; }) >= 16;
  })) << nodes[(lost + 1) % 3]->output();
  nodes.push_back(node());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i != lost) EXPECT_EQ(nodes[i]->wait(180s), 0) << nodes[i]->output();

  const std::vector<TrainedStep> steps = read_record(record);
  // Attempts and their world sizes: 3, then 2 after the loss, then 3 after the new node came.
  std::map<int64_t, std::set<int64_t>> worlds;
  std::map<int64_t, int64_t> first_global;  // the step each attempt resumed at
  for (const auto& s : steps) {
    worlds[s.attempt].insert(s.world);
    auto it = first_global.find(s.attempt);
    if (it == first_global.end() || s.global < it->second) first_global[s.attempt] = s.global;
  }
  ASSERT_EQ(worlds, (std::map<int64_t, std::set<int64_t>>{{0, {3}}, {1, {2}}, {2, {3}}}));
  EXPECT_GT(first_global[1], 0) << "attempt 1 did not resume from a checkpoint";
  EXPECT_GT(first_global[2], first_global[1]) << "attempt 2 did not resume from attempt 1's checkpoint";
  // The steps that count, per epoch: how often each sample was trained.
  std::map<int64_t, std::map<int64_t, int>> times;
  std::map<int64_t, std::pair<int64_t, int64_t>> last_step;  // per epoch: its last step's (global, world)
  std::map<int64_t, std::set<int64_t>> attempts_of_epoch;
  for (const auto& s : steps) {
    auto next = first_global.find(s.attempt + 1);
    if (next != first_global.end() && s.global >= next->second) continue;  // redone after the resume
    for (int64_t i : s.samples) ++times[s.epoch][i];
    last_step[s.epoch] = std::max(last_step[s.epoch], std::make_pair(s.global, s.world));
    attempts_of_epoch[s.epoch].insert(s.attempt);
  }
  ASSERT_EQ(times.size(), 2u);
  for (const auto& [epoch, counts] : times) {
    EXPECT_EQ(static_cast<int64_t>(counts.size()), samples) << "epoch " << epoch << " skipped samples";
    int64_t repeats = 0;
    for (const auto& [i, n] : counts) {
      EXPECT_LE(n, 2) << "epoch " << epoch << " sample " << i;
      repeats += n - 1;
    }
    EXPECT_LT(repeats, last_step[epoch].second) << "epoch " << epoch << " trained samples twice beyond the padding";
  }
  // Epoch 0 was cut twice (all three attempts trained part of it); the restart for the new node was
  // not counted as one.
  EXPECT_EQ(attempts_of_epoch[0], (std::set<int64_t>{0, 1, 2}));
  std::string survivors;  // which of the two notices the new node first varies
  for (size_t i = 0; i < 3; ++i)
    if (i != lost) survivors += nodes[i]->output();
  EXPECT_NE(survivors.find("node(s) waiting to join: re-forming the group as attempt 2"), std::string::npos) << survivors;
  EXPECT_NE(survivors.find("attempt 2 (restart 1 of at most 3)"), std::string::npos) << survivors;
  EXPECT_NE(nodes.back()->output().find("resumed at world size 3 from 2"), std::string::npos) << nodes.back()->output();
}

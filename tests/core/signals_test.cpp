// The graceful-stop flag: real signals delivered to real processes.
#include <ddp/init.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "support/multiprocess.h"

DDP_TEST_WORKER(stop_flag_worker) {
  ddp::install_stop_handlers();
  std::cout << "ready" << std::endl;
  // Keep "training" until asked to stop; then "checkpoint" and leave with the stop code.
  for (int step = 0; step < 3000 && !ddp::stop_requested(); ++step)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!ddp::stop_requested()) return 99;
  std::cout << "stopping on signal " << ddp::stop_signal() << std::endl;
  if (ddp::testing::env_int("STUBBORN", 0)) std::this_thread::sleep_for(std::chrono::seconds(30));
  return ddp::stop_exit_code();
}

// A worker whose "checkpoint" takes a second after the stop signal: it writes DIR/ready once its
// handlers are in, and DIR/saved when the checkpoint is done. A process that ends before "saved"
// lost its checkpoint.
DDP_TEST_WORKER(slow_checkpoint_worker) {
  ddp::install_stop_handlers();
  const std::string dir = ddp::testing::env_or("DIR", "");
  std::ofstream(dir + "/ready") << ::getpid();
  for (int i = 0; i < 3000 && !ddp::stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!ddp::stop_requested()) return 99;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::ofstream(dir + "/saved") << "checkpoint";
  return ddp::stop_exit_code();
}

// A launcher with three threads, as ddprun has several: thread `spawner` forks the worker with
// PR_SET_PDEATHSIG(SIGTERM) (as ddprun's worker_group does), waits for it to be ready and exits;
// then the main thread exits, then the last thread. The kernel sends the parent-death SIGTERM at
// each of those exits, the first two while the launcher process is still alive.
DDP_TEST_WORKER(threaded_launcher) {
  const std::string dir = ddp::testing::env_or("DIR", "");
  // `last` outlives the main thread by 600 ms, however long the worker took to start.
  static std::atomic<bool> main_leaving{false};
  std::thread last([] {
    while (!main_leaving) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  });
  last.detach();
  std::thread spawner([&dir] {
    const std::string exe = ddp::testing::self_exe();
    // Everything the child needs is made before fork: after it, only async-signal-safe calls.
    std::vector<std::string> env_strings = {"DDP_TEST_WORKER=slow_checkpoint_worker", "DIR=" + dir};
    std::vector<char*> env;
    for (auto& e : env_strings) env.push_back(e.data());
    env.push_back(nullptr);
    char* argv[] = {const_cast<char*>(exe.c_str()), nullptr};
    pid_t child = ::fork();
    if (child == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::execve(exe.c_str(), argv, env.data());
      ::_exit(127);
    }
    for (int i = 0; i < 2000 && !std::filesystem::exists(dir + "/ready"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  spawner.join();  // the thread that forked the worker is gone: the first SIGTERM
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  main_leaving = true;
  ::pthread_exit(nullptr);  // the main thread: the second, while `last` keeps the launcher alive
}

namespace {

void wait_for(ddp::testing::Subprocess& p, const std::string& text) {
  for (int i = 0; i < 1000 && p.output().find(text) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_NE(p.output().find(text), std::string::npos) << p.output();
}

}  // namespace

TEST(Signals, SigtermFinishesTheStepAndExits143) {
  ddp::testing::Subprocess p({ddp::testing::self_exe()}, {{"DDP_TEST_WORKER", "stop_flag_worker"}});
  wait_for(p, "ready");
  p.kill(SIGTERM);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 143) << p.output();
  EXPECT_NE(p.output().find("stopping on signal 15"), std::string::npos) << p.output();
}

TEST(Signals, SigintExits130) {
  ddp::testing::Subprocess p({ddp::testing::self_exe()}, {{"DDP_TEST_WORKER", "stop_flag_worker"}});
  wait_for(p, "ready");
  p.kill(SIGINT);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 130) << p.output();
}

TEST(Signals, ASecondSignalEndsAtOnce) {
  ddp::testing::Subprocess p({ddp::testing::self_exe()},
                             {{"DDP_TEST_WORKER", "stop_flag_worker"}, {"STUBBORN", "1"}});
  wait_for(p, "ready");
  p.kill(SIGTERM);
  wait_for(p, "stopping on signal 15");
  auto start = std::chrono::steady_clock::now();
  // The second signal comes from another process, as from an operator's shell: a repeat from the
  // parent's own pid is the kernel's parent-death signal (the next test) and does not count.
  pid_t sender = ::fork();
  if (sender == 0) _exit(::kill(p.pid(), SIGTERM) == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(sender, &status, 0), sender);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 143) << p.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A launcher killed with several threads alive hands its worker from thread to thread, and the kernel
// sends the parent-death SIGTERM at each hand-over while the launcher still exists. The worker must
// take that as one stop request and finish its checkpoint (this is how ddprun killed by SIGKILL lost
// its workers' stop checkpoints now and then: the second SIGTERM ended them with 143 before the save).
TEST(Signals, ParentDeathSignalRepeatedByEachExitingThreadIsOneStop) {
  const std::string dir = ::testing::TempDir() + "/pdeath-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // the orphaned worker becomes our child
  ddp::testing::Subprocess launcher({ddp::testing::self_exe()},
                                    {{"DDP_TEST_WORKER", "threaded_launcher"}, {"DIR", dir}});
  EXPECT_EQ(launcher.wait(std::chrono::seconds(20)), 0) << launcher.output();
  std::string worker_pid;
  std::ifstream(dir + "/ready") >> worker_pid;
  ASSERT_FALSE(worker_pid.empty()) << "the worker never started: " << launcher.output();
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < 2000 && (r = ::waitpid(std::stoi(worker_pid), &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  ASSERT_EQ(r, std::stoi(worker_pid)) << "the worker did not end";
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_TRUE(std::filesystem::exists(dir + "/saved")) << "the worker ended before its checkpoint was written";
  std::filesystem::remove_all(dir);
}

TEST(Signals, RequestAndClearInProcess) {
  ddp::clear_stop_request();
  EXPECT_FALSE(ddp::stop_requested());
  EXPECT_EQ(ddp::stop_exit_code(), 143);
  ddp::request_stop(SIGINT);
  EXPECT_TRUE(ddp::stop_requested());
  EXPECT_EQ(ddp::stop_signal(), SIGINT);
  EXPECT_EQ(ddp::stop_exit_code(), 130);
  ddp::request_stop(SIGTERM);  // the first request stays
  EXPECT_EQ(ddp::stop_signal(), SIGINT);
  ddp::clear_stop_request();
  EXPECT_FALSE(ddp::stop_requested());
}

// ---- StopVote: every rank sees the same outcome at the same poll, one poll after the signal --------
DDP_TEST_WORKER(stop_vote_worker) {
  auto pg = ddp::init_process_group();
  ddp::clear_stop_request();
  ddp::StopVote vote(*pg, std::chrono::milliseconds(0));  // a vote at every poll
  constexpr int kSignalAt = 5;  // the last rank "gets SIGTERM" before its 6th poll
  for (int poll = 0; poll < 20; ++poll) {
    if (pg->rank() == pg->size() - 1 && poll == kSignalAt) ddp::request_stop(SIGTERM);
    const bool stop = vote.poll();
    // Other collectives between polls keep their order with the vote in flight.
    std::vector<at::Tensor> t = {at::ones({3})};
    pg->allreduce(t)->wait();
    if (t[0][0].item<float>() != static_cast<float>(pg->size())) return 3;
    if (stop) {
      std::cout << "stopped at poll " << poll << " exit " << ddp::stop_exit_code() << std::endl;
      return poll == kSignalAt + 1 && ddp::stop_exit_code() == 143 ? 0 : 4;
    }
  }
  return 5;  // never stopped
}

TEST(Signals, StopVoteStopsEveryRankAtTheSamePoll) {
  auto results = ddp::testing::run_workers("stop_vote_worker", 3);
  ddp::testing::expect_all_succeeded(results);
  for (const auto& r : results) EXPECT_NE(r.output.find("stopped at poll 6 exit 143"), std::string::npos) << r.output;
}

// With the default spacing, fast steps are polled many times per vote; every rank still stops at
// the same poll, soon after the signal: within two vote intervals (~2 x 100 ms of 5 ms steps).
DDP_TEST_WORKER(stop_vote_spaced_worker) {
  auto pg = ddp::init_process_group();
  ddp::clear_stop_request();
  ddp::StopVote vote(*pg);
  constexpr int kSignalAt = 100;
  for (int poll = 0; poll < 400; ++poll) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a "step"
    if (pg->rank() == 0 && poll == kSignalAt) ddp::request_stop(SIGTERM);
    if (vote.poll()) {
      std::cout << "stopped at poll " << poll << std::endl;
      return poll > kSignalAt && poll <= kSignalAt + 60 ? 0 : 4;
    }
  }
  return 5;  // never stopped
}

TEST(Signals, StopVoteSpacedVotesStillStopEveryRankAtTheSamePoll) {
  auto results = ddp::testing::run_workers("stop_vote_spaced_worker", 2);
  ddp::testing::expect_all_succeeded(results);
  ASSERT_EQ(results.size(), 2u);
  auto stopped_at = [](const std::string& out) {
    const size_t at = out.find("stopped at poll ");
    return at == std::string::npos ? -1 : std::stoi(out.substr(at + 16));
  };
  EXPECT_GT(stopped_at(results[0].output), 0) << results[0].output;
  EXPECT_EQ(stopped_at(results[0].output), stopped_at(results[1].output));
}

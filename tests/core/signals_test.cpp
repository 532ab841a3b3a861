// The graceful-stop flag: real signals delivered to real processes.
#include <ddp/init.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
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
  p.kill(SIGTERM);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 143) << p.output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
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

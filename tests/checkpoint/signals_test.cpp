// The graceful-stop flag: real signals delivered to real processes.
#include <ddp/signals.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

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

// The harness's forked ranks (run_workers -> Subprocess::fork_running, tests/support/multiprocess.h)
// must begin as a started process does. A started LibTorch process seeds its default CPU generator
// nondeterministically (c10::detail::getNonDeterministicRandom, in ATen/CPUGeneratorImpl.cpp), so
// two started ranks draw different numbers unless the worker seeds. A plain fork would instead copy
// the test process's generator: every rank would draw the same numbers, the test process's next
// ones, and a worker that forgot to seed would pass under fork and fail when it is started afresh.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "support/multiprocess.h"

namespace {

// Set by the test before it starts the ranks: a fork sees it, a started executable does not.
int g_set_before_the_ranks_start = 0;

std::string draws(const char* label) {
  const at::Tensor t = at::rand({4}, at::TensorOptions().dtype(at::kDouble));
  std::ostringstream line;
  line << label << std::setprecision(17);
  for (int64_t i = 0; i < t.numel(); ++i) line << " " << t[i].item<double>();
  return line.str();
}

DDP_TEST_WORKER(print_draws) {
  std::cout << draws("unseeded") << "\n";
  at::manual_seed(7);
  std::cout << draws("seeded") << "\nforked " << g_set_before_the_ranks_start << std::endl;
  return 0;
}

std::string line_starting(const std::string& output, const std::string& prefix) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

TEST(ForkedWorkers, BeginWithTheGeneratorOfAStartedProcess) {
  // This process's generator somewhere in its stream, as after earlier tests.
  at::manual_seed(12345);
  at::rand({7});
  g_set_before_the_ranks_start = 1;
  const auto forked = ddp::testing::run_workers("print_draws", 2);
  ddp::testing::WorkerOptions exec;
  exec.exec = true;
  const auto started = ddp::testing::run_workers("print_draws", 2, exec);
  // What a rank that inherited this process's generator would have drawn first.
  const std::string inherited = draws("unseeded");
  ddp::testing::expect_all_succeeded(forked);
  ddp::testing::expect_all_succeeded(started);
  ASSERT_EQ(forked.size(), 2u);
  ASSERT_EQ(started.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    // The ranks really were forks and fresh starts.
    EXPECT_EQ(line_starting(forked[r].output, "forked "), "forked 1") << forked[r].output;
    EXPECT_EQ(line_starting(started[r].output, "forked "), "forked 0") << started[r].output;
    EXPECT_NE(line_starting(forked[r].output, "unseeded "), inherited) << "rank " << r << " continued the test's stream";
    // Seeded, every process draws the same, forked or started.
    EXPECT_EQ(line_starting(forked[r].output, "seeded "), line_starting(started[0].output, "seeded "));
    EXPECT_EQ(line_starting(started[r].output, "seeded "), line_starting(started[0].output, "seeded "));
  }
  // Unseeded, two ranks draw differently, forked as started.
  EXPECT_NE(line_starting(started[0].output, "unseeded "), line_starting(started[1].output, "unseeded "));
  EXPECT_NE(line_starting(forked[0].output, "unseeded "), line_starting(forked[1].output, "unseeded "));
  EXPECT_FALSE(line_starting(forked[0].output, "unseeded ").empty()) << forked[0].output;
}

}  // namespace

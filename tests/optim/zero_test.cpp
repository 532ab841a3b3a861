// ZeroRedundancyOptimizer over real ranks (zero_workers.cpp says what each worker asserts).
#include <gtest/gtest.h>

#include <filesystem>

#include "support/multiprocess.h"
#include "support/python_ranks.h"

namespace {

using ddp::testing::expect_all_succeeded;
using ddp::testing::run_workers;

ddp::testing::WorkerOptions in_dir(const std::string& dir) {
  ddp::testing::WorkerOptions options;
  options.timeout = std::chrono::seconds(90);
  options.env["DDP_ZERO_DIR"] = dir;
  return options;
}

TEST(ZeroRedundancyOptimizer, EqualsThePlainOptimizerBitForBitWithAShareOfItsState) {
  expect_all_succeeded(run_workers("zero_matches_plain", 2));
  expect_all_succeeded(run_workers("zero_matches_plain", 3));
}

TEST(ZeroRedundancyOptimizer, ResumesExactlyAndItsCheckpointMovesToAnotherWorldSize) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-zero-resume");
  expect_all_succeeded(run_workers("zero_resume_save", 2, in_dir(dir)));
  expect_all_succeeded(run_workers("zero_resume_load", 2, in_dir(dir)));
  expect_all_succeeded(run_workers("zero_resume_other_world", 3, in_dir(dir)));
  std::filesystem::remove_all(dir);
}

TEST(ZeroRedundancyOptimizer, MisuseIsANamedConfigError) {
  expect_all_succeeded(run_workers("zero_errors", 2));
}

// Runs a tests/optim/python script as 2 ranks of a torch.distributed Gloo group (Debian's python3-torch).
void run_python_ranks(const std::string& script, const std::string& dir) {
  ddp::testing::run_python_ranks(std::string(DDP_SOURCE_DIR) + "/tests/optim/python/" + script, {dir});
}

// Same initial weights, batches and schedule through torch.distributed.optim.ZeroRedundancyOptimizer
// (Debian's python3-torch, DDP over Gloo, 2 ranks; SGD with momentum, and Adam in two groups): the
// same owner for every parameter and the same final weights, bit for bit.
TEST(ZeroRedundancyOptimizer, MatchesPyTorchsZeroRedundancyOptimizerBitForBit) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-zero-parity");
  expect_all_succeeded(run_workers("zero_parity_prepare", 1, in_dir(dir)));
  run_python_ranks("zero_reference.py", dir);
  expect_all_succeeded(run_workers("zero_parity_train", 2, in_dir(dir)));
  std::filesystem::remove_all(dir);
}

// ddp::torch_state_dict of a consolidated ZeRO Adam (two groups, after 3 steps), saved with
// torch::pickle_save: torch.load reads it, it equals a plain Adam's export, and torch's own
// ZeroRedundancyOptimizer and Adam, loading it, train on to the C++ run's weights bit for bit
// (python/zero_load_reference.py asserts).
TEST(ZeroRedundancyOptimizer, ItsStateLoadsIntoPyTorchsZeroRedundancyOptimizerAndAdam) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-zero-export");
  expect_all_succeeded(run_workers("zero_parity_prepare", 1, in_dir(dir)));
  expect_all_succeeded(run_workers("zero_export_torch_state", 2, in_dir(dir)));
  run_python_ranks("zero_load_reference.py", dir);
  std::filesystem::remove_all(dir);
}

}  // namespace

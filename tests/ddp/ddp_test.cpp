// DistributedDataParallel tests: each TEST starts real worker processes (ddp_workers.cpp) over
// loopback Gloo and expects every rank to succeed; workers check several cases each.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/multiprocess.h"
#include "support/python_ranks.h"

namespace {

using ddp::testing::expect_all_succeeded;
using ddp::testing::run_workers;

ddp::testing::WorkerOptions quick() {
  ddp::testing::WorkerOptions o;
  o.timeout = std::chrono::seconds(90);  // a hang fails the test instead of stalling the suite
  o.env["OMP_NUM_THREADS"] = "1";
  return o;
}

TEST(DistributedDataParallel, MatchesOneProcess2Ranks) { expect_all_succeeded(run_workers("equivalence", 2, quick())); }
TEST(DistributedDataParallel, MatchesOneProcess3Ranks) { expect_all_succeeded(run_workers("equivalence", 3, quick())); }
TEST(DistributedDataParallel, MatchesOneProcess4Ranks) { expect_all_succeeded(run_workers("equivalence", 4, quick())); }

TEST(DistributedDataParallel, OptionsDoNotChangeResults) {
  expect_all_succeeded(run_workers("options_identical", 2, quick()));
}
TEST(DistributedDataParallel, CommHooks) { expect_all_succeeded(run_workers("comm_hooks", 2, quick())); }
TEST(DistributedDataParallel, NoSyncAccumulatesLocally) { expect_all_succeeded(run_workers("no_sync", 2, quick())); }
TEST(DistributedDataParallel, FindUnusedParameters) {
  expect_all_succeeded(run_workers("unused_parameters", 2, quick()));
}
TEST(DistributedDataParallel, UnusedParameterIsAnErrorNotAHang) {
  expect_all_succeeded(run_workers("unused_parameters_error", 2, quick()));
}
TEST(DistributedDataParallel, BroadcastsBuffers) { expect_all_succeeded(run_workers("buffers", 3, quick())); }
TEST(DistributedDataParallel, MismatchedModelsAreAConfigError) {
  expect_all_succeeded(run_workers("mismatch", 3, quick()));
}
TEST(DistributedDataParallel, RebuiltBucketsAreRank0sOnEveryRank) {
  expect_all_succeeded(run_workers("rebuild", 2, quick()));
}
TEST(DistributedDataParallel, ModuleSavesWithPlainKeys) {
  expect_all_succeeded(run_workers("save_module", 2, quick()));
}

// Runs a tests/ddp/python script as 2 ranks of a torch.distributed Gloo group (Debian's python3-torch).
void run_python_ranks(const std::string& script, const std::vector<std::string>& args) {
  ddp::testing::run_python_ranks(std::string(DDP_SOURCE_DIR) + "/tests/ddp/python/" + script, args);
}

// Same initial weights and data through torch.nn.parallel.DistributedDataParallel (Debian's
// python3-torch, Gloo, 2 ranks) and through ours: same final weights and buffers.
TEST(DistributedDataParallel, MatchesPyTorchDistributedDataParallel) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-parity");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  expect_all_succeeded(run_workers("parity_prepare", 1, options));
  run_python_ranks("ddp_reference.py", {dir});
  expect_all_succeeded(run_workers("parity_train", 2, options));
  std::filesystem::remove_all(dir);
}

// ResNet-18 over 8 buckets (bucket_cap_mb 4, the first 1 MiB): our initial and rebuilt bucket
// assignments are torch's, and the final parameters and buffers equal torch DDP's bit for bit
// (resnet_parity_workers.cpp, python/resnet_reference.py).
TEST(DistributedDataParallel, MatchesPyTorchBitForBitAcrossBucketsResNet18) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-resnet-parity");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  expect_all_succeeded(run_workers("resnet_parity_prepare", 1, options));
  run_python_ranks("resnet_reference.py", {dir, "4"});
  if (HasFatalFailure()) return;
  expect_all_succeeded(run_workers("resnet_parity_train", 2, options));
  std::filesystem::remove_all(dir);
}

// PowerSGD on the same ResNet-18 run: our hook against torch's powerSGD_hook (start_powerSGD_iter 2,
// so two plain steps, then two compressed ones, the second warm-started and error-fed). The final
// parameters and buffers equal torch's bit for bit, and so do the hook's step count and element
// counters. Rank 2 orthogonalizes by Gram-Schmidt, rank 4 by QR, as torch's _orthogonalize does.
void expect_powersgd_matches_torch(int rank) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-powersgd-parity");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  options.env["DDP_POWERSGD_RANK"] = std::to_string(rank);
  expect_all_succeeded(run_workers("resnet_parity_prepare", 1, options));
  run_python_ranks("resnet_reference.py", {dir, "4", std::to_string(rank)});
  if (::testing::Test::HasFatalFailure()) return;
  expect_all_succeeded(run_workers("resnet_parity_train", 2, options));
  std::filesystem::remove_all(dir);
}
TEST(DistributedDataParallel, PowerSGDRank2MatchesPyTorchsHookBitForBitResNet18) { expect_powersgd_matches_torch(2); }
TEST(DistributedDataParallel, PowerSGDRank4MatchesPyTorchsHookBitForBitResNet18) { expect_powersgd_matches_torch(4); }

// The hook alone against torch's, bucket by bucket, on gradients the ResNet run does not have, in
// three configurations, with a state saved and reloaded mid-run (powersgd_hook_workers.cpp).
TEST(DistributedDataParallel, PowerSGDHookMatchesPyTorchsAndResumesExactly) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-powersgd-hook");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  expect_all_succeeded(run_workers("powersgd_hook_prepare", 1, options));
  run_python_ranks("powersgd_reference.py", {dir});
  if (HasFatalFailure()) return;
  expect_all_succeeded(run_workers("powersgd_hook_compare", 2, options));
  std::filesystem::remove_all(dir);
}
// join() on uneven inputs (join_workers.cpp): against torch's model.join() bit for bit (2 ranks,
// BatchNorm, both divisors), against one process (3 ranks), and throw_on_early_termination.
TEST(DistributedDataParallel, JoinMatchesPyTorchsJoinBitForBit) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-join-parity");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  expect_all_succeeded(run_workers("join_parity_prepare", 1, options));
  run_python_ranks("join_reference.py", {dir});
  if (HasFatalFailure()) return;
  expect_all_succeeded(run_workers("join_parity_train", 2, options));
  std::filesystem::remove_all(dir);
}
TEST(DistributedDataParallel, JoinOfThreeUnevenRanksMatchesOneProcess) {
  expect_all_succeeded(run_workers("join_matches_one_process", 3, quick()));
}
TEST(DistributedDataParallel, JoinThrowOnEarlyTerminationStopsEveryRankAtTheSameStep) {
  expect_all_succeeded(run_workers("join_throw_on_early_termination", 3, quick()));
}
// static_graph (static_graph_workers.cpp): a layer whose gradient accumulates twice per backward
// (recomputed in a nested backward) and an unused one. Against torch's DDP(static_graph=True) bit
// for bit, with several options; each step against the shards' average computed without DDP.
TEST(DistributedDataParallel, StaticGraphMatchesPyTorchBitForBit) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-static-graph");
  auto options = quick();
  options.env["DDP_PARITY_DIR"] = dir;
  expect_all_succeeded(run_workers("static_graph_prepare", 1, options));
  run_python_ranks("static_graph_reference.py", {dir});
  if (HasFatalFailure()) return;
  expect_all_succeeded(run_workers("static_graph_parity", 2, options));
  std::filesystem::remove_all(dir);
}
// Where DDP without static_graph can reduce the model: the same results, also with no_sync() and join().
TEST(DistributedDataParallel, StaticGraphMatchesFindUnusedParameters) {
  expect_all_succeeded(run_workers("static_graph_matches_dynamic", 2, quick()));
}
// A graph that changes on one rank: the same named ConfigError from backward on every rank, no hang.
TEST(DistributedDataParallel, StaticGraphChangeIsANamedErrorOnEveryRank) {
  expect_all_succeeded(run_workers("static_graph_graph_changes", 2, quick()));
}
TEST(DistributedDataParallel, PowerSGDResumesExactlyOnTheSavedBucketLayout) {
  expect_all_succeeded(run_workers("powersgd_resume_needs_the_bucket_layout", 2, quick()));
}
TEST(DistributedDataParallel, PowerSGDBadOptionsAndBadStateAreNamedErrors) {
  expect_all_succeeded(run_workers("powersgd_state_errors", 1, quick()));
}

}  // namespace

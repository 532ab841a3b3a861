// Collectives that do not match across ranks (a program bug): different element counts, dtypes,
// roots or kinds of collective. Real processes over loopback. Every rank must end with a
// ddp::ConfigError that names the collective, both descriptions and the ranks, within the group
// timeout: never std::terminate in Gloo's event-loop thread, never a silently wrong result.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gloo_test_util.h"

using namespace ddp::testing;

namespace {

// Runs the mismatched collective `what` and checks the error every rank must get. `odd` is the rank
// whose call differs; `mine` and `theirs` are texts the message must hold (each side's description).
int expect_mismatch(const std::function<void(ddp::ProcessGroup&)>& what, const std::vector<std::string>& must_name) {
  auto pg = make_test_group(std::chrono::seconds(20));
  pg->barrier()->wait();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    what(*pg);
    check(false, "the mismatched collective succeeded on rank " + std::to_string(rank()));
  } catch (const ddp::ConfigError& e) {
    const std::string msg = e.what();
    std::fprintf(stderr, "rank %d: ConfigError after %.3f s: %s\n", rank(), seconds_since(t0), msg.c_str());
    check(seconds_since(t0) < 10, "the mismatch was found within 10 s, not by the 20 s timeout");
    check(contains(msg, "do not match") || contains(msg, "does not match"), "says it is a mismatch: " + msg);
    for (const auto& part : must_name) check(contains(msg, part), "message names '" + part + "': " + msg);
    check(e.exit_code() == ddp::kExitConfig, "permanent: exit code 2");
  }
  // The group is unusable afterwards and says why (the same permanent class).
  try {
    pg->barrier()->wait();
    check(false, "barrier succeeded after a mismatched collective");
  } catch (const ddp::ConfigError& e) {
    check(contains(e.what(), "unusable"), std::string("later op says the group is unusable: ") + e.what());
  }
  return 0;
}

at::Tensor floats(int64_t n) { return at::ones({n}); }

}  // namespace

// 2 ranks, small (the direct allreduce): rank 0 10 floats, rank 1 12.
DDP_TEST_WORKER(allreduce_count_small) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 0 ? 10 : 12)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "rank 0", "rank 1", "10 elements", "12 elements"});
}

// Large enough for the ring (above the 4 MiB direct limit), 2 elements apart.
DDP_TEST_WORKER(allreduce_count_ring) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 1 ? (3 << 20) + 2 : 3 << 20)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "3145728 elements", "3145730 elements"});
}

// Same element count, different dtypes (float32 on rank 0, float64 on rank 1: twice the bytes).
DDP_TEST_WORKER(allreduce_dtype) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {at::ones({16}, rank() == 0 ? at::kFloat : at::kDouble)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "Float", "Double"});
}

DDP_TEST_WORKER(broadcast_count) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 0 ? 10 : 12)};
        pg.broadcast(t)->wait();
      },
      {"broadcast #1", "10 elements", "12 elements"});
}

DDP_TEST_WORKER(broadcast_root) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(10)};
        pg.broadcast(t, ddp::BroadcastOptions().root(rank() == 0 ? 0 : 1))->wait();
      },
      {"broadcast #1", "root 0", "root 1"});
}

DDP_TEST_WORKER(allgather_count) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        const int64_t n = rank() == 0 ? 10 : 12;
        std::vector<at::Tensor> out;
        for (int i = 0; i < pg.size(); ++i) out.push_back(floats(n));
        pg.allgather(out, floats(n))->wait();
      },
      {"allgather #1", "10 elements", "12 elements"});
}

// Different collectives at the same point: one rank allreduces, the others broadcast.
DDP_TEST_WORKER(different_kinds) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(10)};
        if (rank() == 0) pg.allreduce(t)->wait();
        else pg.broadcast(t)->wait();
      },
      {"#1", "allreduce", "broadcast"});
}

// 3 ranks, only rank 2 differs: rank 1 (which matches its ring neighbour rank 0) must know too.
DDP_TEST_WORKER(three_ranks_one_differs) {
  return expect_mismatch(
      [](ddp::ProcessGroup& pg) {
        std::vector<at::Tensor> t = {floats(rank() == 2 ? 12 : 10)};
        pg.allreduce(t)->wait();
      },
      {"allreduce #1", "rank 2", "12 elements", "10 elements"});
}

TEST(GlooMismatch, AllreduceCountSmall) { expect_all_succeeded(run_workers("allreduce_count_small", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllreduceCountRing) { expect_all_succeeded(run_workers("allreduce_count_ring", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllreduceDtype) { expect_all_succeeded(run_workers("allreduce_dtype", 2, gloo_worker_options())); }
TEST(GlooMismatch, BroadcastCount) { expect_all_succeeded(run_workers("broadcast_count", 2, gloo_worker_options())); }
TEST(GlooMismatch, BroadcastRoot) { expect_all_succeeded(run_workers("broadcast_root", 2, gloo_worker_options())); }
TEST(GlooMismatch, AllgatherCount) { expect_all_succeeded(run_workers("allgather_count", 2, gloo_worker_options())); }
TEST(GlooMismatch, DifferentKinds) { expect_all_succeeded(run_workers("different_kinds", 2, gloo_worker_options())); }
TEST(GlooMismatch, ThreeRanksOneDiffers) {
  expect_all_succeeded(run_workers("three_ranks_one_differs", 3, gloo_worker_options()));
}

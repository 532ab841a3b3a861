// Every collective of the Gloo process group, with real processes over loopback and exact expected
// values: 2, 3 and 4 ranks, all dtypes and reduce ops, lists, non-contiguous and 64 MiB tensors.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <ddp/process_group_gloo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <thread>

#include "gloo_test_util.h"

using namespace ddp::testing;
using ddp::ReduceOp;

namespace {

const std::vector<at::ScalarType> kReducible = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax};


// What element i of the reduction of rank_pattern over `n` ranks is, as a multiple of (i % 7 + 1)
// (avg of integers floors, so it is computed on the whole value instead).
at::Tensor expected_reduction(ReduceOp op, int n, at::IntArrayRef sizes, at::ScalarType dtype) {
  double sum = n * (n + 1) / 2.0;
  switch (op) {
    case ReduceOp::kSum: return pattern(sum, sizes, dtype);
    case ReduceOp::kMin: return pattern(1, sizes, dtype);
    case ReduceOp::kMax: return pattern(n, sizes, dtype);
    case ReduceOp::kAvg:
      if (c10::isIntegralType(dtype, false)) return at::floor(pattern(sum, sizes, at::kDouble) / n).to(dtype);
      return pattern(sum / n, sizes, dtype);
  }
  return {};
}

std::string name(ReduceOp op, at::ScalarType dtype, int64_t n) {
  return std::string(ddp::to_string(op)) + " " + c10::toString(dtype) + " x" + std::to_string(n);
}

void run(const std::string& worker, int n) {
  expect_all_succeeded(run_workers(worker, n, gloo_worker_options()));
}

}  // namespace

// ---- allreduce: every dtype x op, sizes that do and do not divide evenly, one > 1 MiB ------------
static void allreduce_dtypes_ops(ddp::ProcessGroup* pg) {
  for (auto dtype : kReducible) {
    for (auto op : kOps) {
      for (int64_t numel : {1, 1001, 300007}) {
        std::vector<at::Tensor> t = {rank_pattern(rank(), {numel}, dtype)};
        pg->allreduce(t, ddp::AllreduceOptions().op(op))->wait();
        check_equal(t[0], expected_reduction(op, world(), {numel}, dtype), name(op, dtype, numel));
      }
    }
  }
}

// ---- allreduce of a list: mixed dtypes, non-contiguous, empty, large in-place members ------------
static void allreduce_tensor_list(ddp::ProcessGroup* pg) {
  for (auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    std::vector<at::Tensor> t = {
        rank_pattern(rank(), {100}, at::kFloat),
        rank_pattern(rank(), {13, 17}, at::kFloat).t(),                  // non-contiguous
        rank_pattern(rank(), {100}, at::kLong).slice(0, 0, 100, 3),      // strided
        rank_pattern(rank(), {0}, at::kDouble),                          // empty
        rank_pattern(rank(), {300000}, at::kFloat),                      // > 1 MiB: reduced in place
        rank_pattern(rank(), {3, 5}, at::kBFloat16),
        rank_pattern(rank(), {6, 4}, at::kHalf).slice(1, 1, 3),          // non-contiguous half
        rank_pattern(rank(), {2, 3}, at::kDouble),
    };
    std::vector<at::Tensor> expect;
    for (auto& x : t) {
      // The expected value of a view is the expected value of its base, viewed the same way.
      expect.push_back(x);
    }
    expect[0] = expected_reduction(op, world(), {100}, at::kFloat);
    expect[1] = expected_reduction(op, world(), {13, 17}, at::kFloat).t();
    expect[2] = expected_reduction(op, world(), {100}, at::kLong).slice(0, 0, 100, 3);
    expect[3] = expected_reduction(op, world(), {0}, at::kDouble);
    expect[4] = expected_reduction(op, world(), {300000}, at::kFloat);
    expect[5] = expected_reduction(op, world(), {3, 5}, at::kBFloat16);
    expect[6] = expected_reduction(op, world(), {6, 4}, at::kHalf).slice(1, 1, 3);
    expect[7] = expected_reduction(op, world(), {2, 3}, at::kDouble);
    auto work = pg->allreduce(t, ddp::AllreduceOptions().op(op));
    work->wait();
    check(work->is_completed() && work->exception() == nullptr, "completed work reports no error");
    for (size_t i = 0; i < t.size(); ++i)
      check_equal(t[i], expect[i], std::string(ddp::to_string(op)) + " list member " + std::to_string(i));
  }
  // A non-contiguous view writes through to its base and leaves the rest of the base alone.
  at::Tensor base = rank_pattern(rank(), {8, 8}, at::kFloat);
  std::vector<at::Tensor> view = {base.slice(1, 0, 8, 2)};
  pg->allreduce(view)->wait();
  at::Tensor expect = rank_pattern(rank(), {8, 8}, at::kFloat);
  expect.slice(1, 0, 8, 2).copy_(expected_reduction(ReduceOp::kSum, world(), {8, 8}, at::kFloat).slice(1, 0, 8, 2));
  check_equal(base, expect, "strided view of a base tensor");
}

// ---- 64 MiB: allreduce and broadcast --------------------------------------------------------------
DDP_TEST_WORKER(large_64mib) {
  auto pg = make_test_group();
  const int64_t n = 16 << 20;  // float32: 64 MiB
  std::vector<at::Tensor> t = {rank_pattern(rank(), {n}, at::kFloat)};
  auto t0 = std::chrono::steady_clock::now();
  pg->allreduce(t)->wait();
  std::fprintf(stderr, "64 MiB allreduce took %.3f s\n", seconds_since(t0));
  check_equal(t[0], expected_reduction(ReduceOp::kSum, world(), {n}, at::kFloat), "64 MiB allreduce");
  std::vector<at::Tensor> b = {rank_pattern(rank(), {n}, at::kFloat)};
  t0 = std::chrono::steady_clock::now();
  pg->broadcast(b, world() - 1)->wait();
  std::fprintf(stderr, "64 MiB broadcast took %.3f s\n", seconds_since(t0));
  check_equal(b[0], rank_pattern(world() - 1, {n}, at::kFloat), "64 MiB broadcast");
  return 0;
}
TEST(GlooLarge, Tensors64MiB2Ranks) { run("large_64mib", 2); }

// ---- broadcast ----------------------------------------------------------------------------------
static void broadcast_lists(ddp::ProcessGroup* pg) {
  for (int root : {0, world() - 1}) {
    auto make = [&](int r) {
      return std::vector<at::Tensor>{
          rank_pattern(r, {1000}, at::kFloat),
          rank_pattern(r, {7, 3}, at::kLong).t(),                 // non-contiguous
          rank_pattern(r, {11}, at::kInt).gt(2 * (r + 1)),        // bool
          rank_pattern(r, {300000}, at::kDouble),                 // large, in place
          rank_pattern(r, {5}, at::kHalf),
      };
    };
    auto t = make(rank());
    pg->broadcast(t, root)->wait();
    auto expect = make(root);
    for (size_t i = 0; i < t.size(); ++i)
      check_equal(t[i], expect[i], "broadcast from " + std::to_string(root) + ", member " + std::to_string(i));
  }
}

// ---- allgather ----------------------------------------------------------------------------------
static void allgather_layouts(ddp::ProcessGroup* pg) {
  const int n = world();
  for (auto dtype : {at::kFloat, at::kLong, at::kBFloat16}) {
    // Separate output tensors, one of them non-contiguous; contiguous input.
    std::vector<at::Tensor> outs;
    for (int i = 0; i < n; ++i)
      outs.push_back(i == 1 ? at::zeros({5, 3}, dtype).t() : at::zeros({3, 5}, dtype));
    pg->allgather(outs, rank_pattern(rank(), {3, 5}, dtype))->wait();
    for (int i = 0; i < n; ++i)
      check_equal(outs[i], rank_pattern(i, {3, 5}, dtype), std::string("allgather ") + c10::toString(dtype) +
                                                               " separate outputs, from rank " + std::to_string(i));
    // Outputs that are rows of one buffer (received directly); non-contiguous input.
    at::Tensor all = at::zeros({n, 1001}, dtype);
    auto rows = all.unbind(0);
    std::vector<at::Tensor> row_vec(rows.begin(), rows.end());
    at::Tensor input = rank_pattern(rank(), {2002}, dtype).slice(0, 0, 2002, 2);
    pg->allgather(row_vec, input)->wait();
    for (int i = 0; i < n; ++i)
      check_equal(all[i], rank_pattern(i, {2002}, dtype).slice(0, 0, 2002, 2),
                  std::string("allgather ") + c10::toString(dtype) + " into rows, from rank " + std::to_string(i));
    // The input is this rank's own row of the output (in place).
    at::Tensor all2 = at::zeros({n, 17}, dtype);
    all2[rank()].copy_(rank_pattern(rank(), {17}, dtype));
    auto rows2 = all2.unbind(0);
    std::vector<at::Tensor> row_vec2(rows2.begin(), rows2.end());
    pg->allgather(row_vec2, all2[rank()])->wait();
    for (int i = 0; i < n; ++i) check_equal(all2[i], rank_pattern(i, {17}, dtype), "in-place allgather");
  }
}

// ---- reduce_scatter -----------------------------------------------------------------------------
static void reduce_scatter_ops(ddp::ProcessGroup* pg) {
  const int n = world();
  for (auto dtype : kReducible) {
    for (auto op : kOps) {
      for (int64_t numel : {1, 999, 70001}) {
        // Input i of rank r is rank_pattern(r) shifted by i, so every output differs.
        std::vector<at::Tensor> inputs;
        for (int i = 0; i < n; ++i) inputs.push_back(rank_pattern(rank(), {numel + i}, dtype).slice(0, i, numel + i));
        at::Tensor out = at::zeros({numel}, dtype);
        pg->reduce_scatter(out, inputs, ddp::ReduceScatterOptions().op(op))->wait();
        at::Tensor expect = expected_reduction(op, n, {numel + rank()}, dtype).slice(0, rank(), numel + rank());
        check_equal(out, expect, "reduce_scatter " + name(op, dtype, numel));
      }
    }
  }
}

// min/max propagate NaN from any rank, like torch.minimum/maximum.
static void nan_propagation(ddp::ProcessGroup* pg) {
  for (auto op : {ReduceOp::kMin, ReduceOp::kMax}) {
    for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
      std::vector<at::Tensor> t = {rank_pattern(rank(), {5}, dtype)};
      if (rank() == world() - 1) t[0][2] = std::nan("");
      pg->allreduce(t, ddp::AllreduceOptions().op(op))->wait();
      check(std::isnan(t[0][2].item<double>()), "NaN propagates through " + name(op, dtype, 5));
      check(!std::isnan(t[0][1].item<double>()), "no NaN elsewhere for " + name(op, dtype, 5));
    }
  }
}

// ---- every collective at 2, 3 and 4 ranks (one set of processes per world size) ------------------
DDP_TEST_WORKER(all_collectives) {
  auto store = worker_store();
  auto pg = make_test_group(store, ddp::GlooOptions());
  // Every allreduce above also through the other algorithm: with the default threshold these sizes
  // take the direct exchange, so a second group is made to take the ring for all of them.
  ddp::GlooOptions ring_only;
  ring_only.direct_allreduce_max_bytes(0);
  auto ring_pg = make_test_group(store, ring_only);
  for (auto* g : {pg.get(), ring_pg.get()}) {
    allreduce_dtypes_ops(g);
    allreduce_tensor_list(g);
  }
  broadcast_lists(pg.get());
  allgather_layouts(pg.get());
  reduce_scatter_ops(pg.get());
  nan_propagation(pg.get());
  return 0;
}
TEST(GlooCollectives, AllOps2Ranks) { run("all_collectives", 2); }
TEST(GlooCollectives, AllOps3Ranks) { run("all_collectives", 3); }
TEST(GlooCollectives, AllOps4Ranks) { run("all_collectives", 4); }

// ---- barrier, FIFO order of queued work, Work::wait(timeout) ------------------------------------
DDP_TEST_WORKER(barrier_and_queue) {
  auto pg = make_test_group();
  // Barrier: nobody leaves before the last rank arrives.
  if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(600));
  auto t0 = std::chrono::steady_clock::now();
  pg->barrier()->wait();
  if (rank() != 0) check(seconds_since(t0) > 0.4, "barrier returned before rank 0 arrived");

  // Many operations in flight at once complete in issue order with the right data.
  std::vector<std::vector<at::Tensor>> data;
  std::vector<ddp::WorkPtr> works;
  for (int k = 0; k < 20; ++k) data.push_back({rank_pattern(rank(), {64 + k}, at::kFloat) * k});
  for (int k = 0; k < 20; ++k) works.push_back(pg->allreduce(data[k]));
  for (int k = 0; k < 20; ++k) {
    works[k]->wait();
    check_equal(data[k][0], expected_reduction(ReduceOp::kSum, world(), {64 + k}, at::kFloat) * k,
                "queued allreduce " + std::to_string(k));
  }

  // wait(timeout) gives up on an operation that is still running; the operation goes on.
  if (rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(800));
  auto barrier = pg->barrier();
  if (rank() == 0) {
    bool timed_out = false;
    try {
      barrier->wait(std::chrono::milliseconds(100));
    } catch (const ddp::TimeoutError& e) {
      timed_out = std::string(e.what()).find("barrier #") != std::string::npos;
    }
    check(timed_out, "wait(100 ms) on a barrier a peer joins 800 ms later throws TimeoutError naming it");
    check(!barrier->is_completed(), "the barrier is still running");
  }
  barrier->wait();
  check(barrier->is_completed() && !barrier->exception(), "barrier completed without error");
  return 0;
}
TEST(GlooWork, BarrierAndQueue3Ranks) { run("barrier_and_queue", 3); }

// ---- bad arguments fail at once with ConfigError and leave the group usable ------------------------
template <typename Fn>
void expect_config_error(Fn fn, const std::string& must_contain, const std::string& what) {
  try {
    fn();
  } catch (const ddp::ConfigError& e) {
    check(std::string(e.what()).find(must_contain) != std::string::npos,
          what + ": message '" + e.what() + "' lacks '" + must_contain + "'");
    return;
  }
  check(false, what + ": no ConfigError");
}

DDP_TEST_WORKER(bad_arguments) {
  auto pg = make_test_group();
  std::vector<at::Tensor> meta = {at::empty({4}, at::TensorOptions().device(at::kMeta))};
  expect_config_error([&] { pg->allreduce(meta); }, "nccl", "non-CPU tensor");
  std::vector<at::Tensor> bools = {at::zeros({4}, at::kBool)};
  expect_config_error([&] { pg->allreduce(bools); }, "Bool", "bool allreduce");
  std::vector<at::Tensor> f = {at::zeros({4})};
  expect_config_error([&] { pg->broadcast(f, world()); }, "root", "root out of range");
  std::vector<at::Tensor> one = {at::zeros({4})};
  expect_config_error([&] { pg->allgather(one, at::zeros({4})); }, "output tensors", "allgather output count");
  std::vector<at::Tensor> ins(world(), at::zeros({5}));
  at::Tensor out = at::zeros({4});
  expect_config_error([&] { pg->reduce_scatter(out, ins); }, "must match", "reduce_scatter size mismatch");
  // The group still works.
  std::vector<at::Tensor> t = {rank_pattern(rank(), {10}, at::kFloat)};
  pg->allreduce(t)->wait();
  check_equal(t[0], expected_reduction(ReduceOp::kSum, world(), {10}, at::kFloat), "allreduce after bad calls");
  return 0;
}
TEST(GlooArguments, BadArgumentsAreConfigErrors) { run("bad_arguments", 2); }

// ---- a group of one ------------------------------------------------------------------------------
DDP_TEST_WORKER(single_rank) {
  auto pg = make_test_group();
  check(pg->size() == 1 && pg->rank() == 0 && pg->backend_name() == "gloo", "rank 0 of 1, gloo");
  std::vector<at::Tensor> t = {rank_pattern(0, {10}, at::kFloat), rank_pattern(0, {3}, at::kLong)};
  pg->allreduce(t, ddp::AllreduceOptions().op(ReduceOp::kAvg))->wait();
  check_equal(t[0], rank_pattern(0, {10}, at::kFloat), "avg over one rank");
  pg->broadcast(t, 0)->wait();
  std::vector<at::Tensor> outs = {at::zeros({10})};
  pg->allgather(outs, t[0])->wait();
  check_equal(outs[0], t[0], "allgather over one rank");
  std::vector<at::Tensor> ins = {rank_pattern(0, {4}, at::kInt)};
  at::Tensor out = at::zeros({4}, at::kInt);
  pg->reduce_scatter(out, ins)->wait();
  check_equal(out, ins[0], "reduce_scatter over one rank");
  pg->barrier()->wait();
  return 0;
}
TEST(GlooSingle, OneRank) { run("single_rank", 1); }

// ---- the network interface comes from GLOO_SOCKET_IFNAME when set ---------------------------------
DDP_TEST_WORKER(socket_ifname) {
  ddp::GlooOptions options;  // no hostname: the environment decides
  options.timeout(std::chrono::seconds(30));
  auto store = worker_store();
  setenv("GLOO_SOCKET_IFNAME", "nosuchif0", 1);
  expect_config_error([&] { ddp::make_gloo_process_group(store, 0, 1, options); },
                      "interface 'nosuchif0' (from GLOO_SOCKET_IFNAME)", "unknown interface");
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  auto pg = ddp::make_gloo_process_group(store, 0, 1, options);
  pg->barrier()->wait();
  return 0;
}
TEST(GlooSingle, SocketInterfaceFromEnvironment) { run("socket_ifname", 1); }

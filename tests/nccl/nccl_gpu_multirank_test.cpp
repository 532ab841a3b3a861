// The NCCL process group across processes, one GPU each (LOCAL_RANK = rank): real reductions and
// a peer that never joins an op. Needs >= 2 GPUs; skips itself otherwise.
#include "gpu_test_util.h"
#include "support/multiprocess.h"

#include <ddp/errors.h>
#include <ddp/store.h>

#include <unistd.h>

#include <chrono>
#include <thread>

namespace {

using ddp::testing::contains;
using ddp::testing::env_int;
using ddp::testing::env_or;
using ddp::testing::on_cuda;

constexpr int kMaxRanks = 4;

int ranks_to_run() { return std::min(ddp::testing::cuda_device_count(), kMaxRanks); }

std::shared_ptr<ddp::ProcessGroup> join_from_env(ddp::NcclOptions options = {}) {
  const int rank = env_int("RANK", 0);
  auto store = std::make_shared<ddp::TCPStore>(ddp::TCPStoreOptions()
                                                   .host(env_or("MASTER_ADDR", "127.0.0.1"))
                                                   .port(env_int("MASTER_PORT", 29500))
                                                   .is_server(rank == 0)
                                                   .timeout(std::chrono::seconds(60)));
  return ddp::make_nccl_process_group(store, rank, env_int("WORLD_SIZE", 1), env_int("LOCAL_RANK", 0), options);
}

#define CHECK_OR_RETURN(cond, code)                                    \
  if (!(cond)) {                                                       \
    std::fprintf(stderr, "check failed (%s:%d): %s\n", __FILE__, __LINE__, #cond); \
    return code;                                                       \
  }

DDP_TEST_WORKER(nccl_collectives_multi) {
  auto pg = join_from_env();
  const int rank = pg->rank(), world = pg->size(), dev = env_int("LOCAL_RANK", 0);
  const double sum = world * (world + 1) / 2.0;  // ranks contribute rank + 1
  for (auto dtype : ddp::testing::reduction_dtypes()) {
    for (auto op : {ddp::ReduceOp::kSum, ddp::ReduceOp::kMin, ddp::ReduceOp::kMax, ddp::ReduceOp::kAvg}) {
      std::vector<at::Tensor> t{at::full({5}, rank + 1, on_cuda(dtype, dev))};
      pg->allreduce(t, ddp::AllreduceOptions().op(op))->wait();
      double expected = op == ddp::ReduceOp::kSum ? sum : op == ddp::ReduceOp::kMin ? 1 : op == ddp::ReduceOp::kMax ? world : sum / world;
      if (op == ddp::ReduceOp::kAvg && at::isIntegralType(dtype, false)) expected = static_cast<int64_t>(sum) / world;
      auto want = at::full({5}, expected, at::TensorOptions().dtype(dtype));
      CHECK_OR_RETURN(at::allclose(t[0].cpu().to(at::kDouble), want.to(at::kDouble)), 20);
    }
  }
  std::vector<at::Tensor> b{at::full({3}, rank, on_cuda(at::kLong, dev))};
  pg->broadcast(b, world - 1)->wait();
  CHECK_OR_RETURN(at::equal(b[0].cpu(), at::full({3}, world - 1, at::kLong)), 21);

  auto input = at::full({4}, rank, on_cuda(at::kFloat, dev));
  std::vector<at::Tensor> gathered;
  for (int i = 0; i < world; ++i) gathered.push_back(at::empty({4}, on_cuda(at::kFloat, dev)));
  pg->allgather(gathered, input)->wait();
  for (int i = 0; i < world; ++i) CHECK_OR_RETURN(at::equal(gathered[i].cpu(), at::full({4}, i, at::kFloat)), 22);
  auto flat = at::empty({world, 4}, on_cuda(at::kFloat, dev));
  std::vector<at::Tensor> rows;
  for (int i = 0; i < world; ++i) rows.push_back(flat[i]);
  pg->allgather(rows, input)->wait();
  for (int i = 0; i < world; ++i) CHECK_OR_RETURN(at::equal(flat[i].cpu(), at::full({4}, i, at::kFloat)), 23);

  // inputs[i] = 10 * rank + i: rank r receives sum over ranks of (10 * q + r).
  std::vector<at::Tensor> inputs;
  for (int i = 0; i < world; ++i) inputs.push_back(at::full({6}, 10 * rank + i, on_cuda(at::kDouble, dev)));
  auto out = at::empty({6}, on_cuda(at::kDouble, dev));
  pg->reduce_scatter(out, inputs)->wait();
  double want_rs = 10.0 * world * (world - 1) / 2 + world * rank;
  CHECK_OR_RETURN(at::equal(out.cpu(), at::full({6}, want_rs, at::kDouble)), 24);
  auto flat_in = at::empty({world, 6}, on_cuda(at::kDouble, dev));
  std::vector<at::Tensor> in_rows;
  for (int i = 0; i < world; ++i) {
    in_rows.push_back(flat_in[i]);
    in_rows.back().fill_(10 * rank + i);
  }
  pg->reduce_scatter(out, in_rows)->wait();
  CHECK_OR_RETURN(at::equal(out.cpu(), at::full({6}, want_rs, at::kDouble)), 25);

  pg->barrier()->wait();
  return 0;
}

DDP_TEST_WORKER(nccl_peer_skips_an_op) {
  ddp::NcclOptions options;
  options.timeout(std::chrono::seconds(3));
  auto pg = join_from_env(options);
  std::vector<at::Tensor> t{at::ones({1024}, on_cuda(at::kFloat, env_int("LOCAL_RANK", 0)))};
  pg->allreduce(t)->wait();
  pg->barrier()->wait();
  if (pg->rank() != 0) {
    // Never joins the second allreduce; stays alive so the failure is a timeout, not a lost peer.
    std::this_thread::sleep_for(std::chrono::seconds(8));
    _exit(0);  // skip the communicator's teardown: rank 0 has aborted its side
  }
  try {
    pg->allreduce(t)->wait(std::chrono::seconds(60));
    std::fprintf(stderr, "allreduce #3 finished without rank 1\n");
    return 30;
  } catch (const ddp::TimeoutError& e) {
    std::fprintf(stderr, "rank 0: %s\n", e.what());
    CHECK_OR_RETURN(contains(e.what(), "allreduce #3"), 31);
    CHECK_OR_RETURN(contains(e.what(), "rank 0 of"), 32);
  }
  return 0;
}

TEST(NcclMultiRank, CollectivesAcrossGpus) {
  DDP_REQUIRE_GPU();
  if (ranks_to_run() < 2) GTEST_SKIP() << "needs >= 2 GPUs, found " << ddp::testing::cuda_device_count();
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("nccl_collectives_multi", ranks_to_run()));
}

TEST(NcclMultiRank, APeerThatSkipsAnOpTimesOutNamingTheOp) {
  DDP_REQUIRE_GPU();
  if (ranks_to_run() < 2) GTEST_SKIP() << "needs >= 2 GPUs, found " << ddp::testing::cuda_device_count();
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("nccl_peer_skips_an_op", 2));
}

}  // namespace

// The NCCL process group on one GPU (world size 1): every op and dtype, the ordering with PyTorch's
// current stream, Work semantics, argument errors and the watchdog. Each test skips itself, saying
// why, without a CUDA device (e.g. with Debian's CPU LibTorch).
#include "gpu_test_util.h"
#include "memory_store.h"
#include "support/multiprocess.h"

#include <ddp/checkpoint.h>
#include <ddp/errors.h>
#include <ddp/powersgd_hook.h>
#include <ddp/process_group_gloo.h>
#include <ddp/zero_redundancy_optimizer.h>

#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace {

using ddp::testing::contains;
using ddp::testing::on_cuda;

std::shared_ptr<ddp::ProcessGroup> world_of_one(ddp::NcclOptions options = {}) {
  return ddp::make_nccl_process_group(std::make_shared<ddp::testing::MemoryStore>(), 0, 1, 0, options);
}

class NcclOneGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    DDP_REQUIRE_GPU();
    if (!pg_) pg_ = world_of_one();
  }
  static void TearDownTestSuite() { pg_.reset(); }
  static std::shared_ptr<ddp::ProcessGroup> pg_;
};
std::shared_ptr<ddp::ProcessGroup> NcclOneGpu::pg_;

TEST_F(NcclOneGpu, DescribesItself) {
  EXPECT_EQ(pg_->backend_name(), "nccl");
  EXPECT_EQ(pg_->rank(), 0);
  EXPECT_EQ(pg_->size(), 1);
  EXPECT_EQ(pg_->timeout(), std::chrono::milliseconds(std::chrono::minutes(10)));
}

TEST_F(NcclOneGpu, AllreduceEveryOpAndDtype) {
  for (auto dtype : ddp::testing::reduction_dtypes()) {
    for (auto op : {ddp::ReduceOp::kSum, ddp::ReduceOp::kAvg, ddp::ReduceOp::kMin, ddp::ReduceOp::kMax}) {
      auto t = at::arange(0, 12, on_cuda(dtype)).reshape({3, 4});
      auto expected = t.cpu();
      std::vector<at::Tensor> tensors{t};
      pg_->allreduce(tensors, ddp::AllreduceOptions().op(op))->wait();
      EXPECT_TRUE(at::equal(t.cpu(), expected)) << c10::toString(dtype) << " op " << static_cast<int>(op);
    }
  }
}

TEST_F(NcclOneGpu, AllreduceSeveralTensorsOfDifferentDtypesAtOnce) {
  std::vector<at::Tensor> tensors{at::full({7}, 2.5, on_cuda(at::kFloat)), at::full({3, 3}, 4, on_cuda(at::kLong)),
                                  at::empty({0}, on_cuda(at::kFloat)), at::full({5}, 1.5, on_cuda(at::kBFloat16))};
  pg_->allreduce(tensors, ddp::AllreduceOptions().op(ddp::ReduceOp::kAvg))->wait();
  EXPECT_TRUE(at::equal(tensors[0].cpu(), at::full({7}, 2.5, at::kFloat)));
  EXPECT_TRUE(at::equal(tensors[1].cpu(), at::full({3, 3}, 4, at::kLong)));
  EXPECT_TRUE(at::equal(tensors[3].cpu(), at::full({5}, 1.5, at::kBFloat16)));
}

TEST_F(NcclOneGpu, BroadcastMovesAnyDtype) {
  std::vector<at::Tensor> tensors{at::arange(0, 10, on_cuda(at::kByte)), at::ones({4}, on_cuda(at::kBool)),
                                  at::arange(0, 6, on_cuda(at::kDouble)).reshape({2, 3})};
  auto before0 = tensors[0].cpu(), before1 = tensors[1].cpu(), before2 = tensors[2].cpu();
  pg_->broadcast(tensors, 0)->wait();
  EXPECT_TRUE(at::equal(tensors[0].cpu(), before0));
  EXPECT_TRUE(at::equal(tensors[1].cpu(), before1));
  EXPECT_TRUE(at::equal(tensors[2].cpu(), before2));
}

TEST_F(NcclOneGpu, AllgatherIntoSeparateAndFlatOutputs) {
  auto input = at::arange(0, 8, on_cuda(at::kHalf));
  std::vector<at::Tensor> separate{at::zeros({8}, on_cuda(at::kHalf))};
  pg_->allgather(separate, input)->wait();
  EXPECT_TRUE(at::equal(separate[0].cpu(), input.cpu()));

  auto flat = at::zeros({1, 8}, on_cuda(at::kHalf));
  std::vector<at::Tensor> views{flat[0]};
  pg_->allgather(views, input)->wait();
  EXPECT_TRUE(at::equal(flat[0].cpu(), input.cpu()));
}

TEST_F(NcclOneGpu, ReduceScatterFromSeparateAndFlatInputs) {
  for (auto dtype : ddp::testing::reduction_dtypes()) {
    auto output = at::zeros({6}, on_cuda(dtype));
    std::vector<at::Tensor> inputs{at::arange(0, 6, on_cuda(dtype))};
    pg_->reduce_scatter(output, inputs, ddp::ReduceScatterOptions().op(ddp::ReduceOp::kMax))->wait();
    EXPECT_TRUE(at::equal(output.cpu(), inputs[0].cpu())) << c10::toString(dtype);

    auto flat = at::arange(0, 6, on_cuda(dtype)).reshape({1, 6});
    std::vector<at::Tensor> views{flat[0]};
    auto out2 = at::zeros({6}, on_cuda(dtype));
    pg_->reduce_scatter(out2, views)->wait();
    EXPECT_TRUE(at::equal(out2.cpu(), flat[0].cpu())) << c10::toString(dtype);
  }
}

TEST_F(NcclOneGpu, BarrierBlocksUntilDone) {
  auto work = pg_->barrier();
  work->wait();
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(work->exception(), nullptr);
}

TEST_F(NcclOneGpu, WaitWithTimeoutAndIsCompleted) {
  std::vector<at::Tensor> tensors{at::ones({1 << 20}, on_cuda(at::kFloat))};
  auto work = pg_->allreduce(tensors);
  work->wait(std::chrono::seconds(30));
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(work->exception(), nullptr);
}

// Queues ~tens of ms of matrix products on the current stream, then sets `t` to 3: a collective
// that did not wait for the current stream would read t's old zeros.
void slow_then_fill(at::Tensor& t) {
  auto a = at::randn({4096, 4096}, on_cuda(at::kFloat));
  auto scratch = at::empty_like(a);
  for (int i = 0; i < 20; ++i) at::mm_out(scratch, a, a);
  t.fill_(3);
}

void check_ordering(ddp::ProcessGroup& pg) {
  auto input = at::zeros({1 << 22}, on_cuda(at::kFloat));
  auto output = at::zeros({1 << 22}, on_cuda(at::kFloat));
  slow_then_fill(input);
  std::vector<at::Tensor> outputs{output};
  pg.allgather(outputs, input)->wait();  // the current stream now waits for the collective
  // Queued on the current stream right after wait(): must see the gathered 3s, not zeros.
  auto doubled = output * 2;
  EXPECT_TRUE(at::equal(doubled.cpu(), at::full({1 << 22}, 6, at::kFloat)))
      << "the collective did not order with the current stream";
}

TEST_F(NcclOneGpu, OrdersWithTheDefaultCurrentStream) { check_ordering(*pg_); }

TEST_F(NcclOneGpu, OrdersWithANonDefaultCurrentStream) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  c10::Stream side = impl->getStreamFromGlobalPool(c10::Device(c10::DeviceType::CUDA, 0));
  c10::Stream previous = impl->exchangeStream(side);
  check_ordering(*pg_);
  impl->exchangeStream(previous);
}

TEST_F(NcclOneGpu, MemoryOfDroppedInFlightTensorsIsNotReused) {
  // The caller lets go of its tensors right after issuing; the Work (and the allocator's record of
  // our stream) keep their memory until the GPU is done, so the caching allocator must not hand it
  // to the next allocation of the same size while the collective is still queued.
  ddp::WorkPtr work;
  const void* dropped = nullptr;
  {
    auto input = at::zeros({1 << 22}, on_cuda(at::kFloat));
    slow_then_fill(input);  // keeps the collective queued for tens of ms
    std::vector<at::Tensor> outputs{at::zeros({1 << 22}, on_cuda(at::kFloat))};
    dropped = outputs[0].data_ptr();
    work = pg_->allgather(outputs, input);
  }
  auto reuse = at::empty({1 << 22}, on_cuda(at::kFloat));
  EXPECT_NE(reuse.data_ptr(), dropped) << "the allocator reused an in-flight output";
  reuse.fill_(7);
  work->wait();
  EXPECT_TRUE(at::equal(reuse.cpu(), at::full({1 << 22}, 7, at::kFloat)));
}

TEST_F(NcclOneGpu, BadArgumentsAreConfigErrors) {
  std::vector<at::Tensor> cpu{at::ones({4})};
  EXPECT_THROW(pg_->allreduce(cpu), ddp::ConfigError);
  std::vector<at::Tensor> bytes{at::ones({4}, on_cuda(at::kByte))};
  EXPECT_THROW(pg_->allreduce(bytes), ddp::ConfigError);
  std::vector<at::Tensor> strided{at::ones({4, 4}, on_cuda(at::kFloat)).select(1, 0)};
  EXPECT_THROW(pg_->allreduce(strided), ddp::ConfigError);
  std::vector<at::Tensor> ok{at::ones({4}, on_cuda(at::kFloat))};
  EXPECT_THROW(pg_->broadcast(ok, 1), ddp::ConfigError);
  std::vector<at::Tensor> two{at::ones({4}, on_cuda(at::kFloat)), at::ones({4}, on_cuda(at::kFloat))};
  EXPECT_THROW(pg_->allgather(two, ok[0]), ddp::ConfigError);
  // Argument errors leave the group usable.
  pg_->allreduce(ok)->wait();
  EXPECT_TRUE(at::equal(ok[0].cpu(), at::ones({4})));
}

// PowerSGD (ddp/powersgd_hook.h) on CUDA tensors over NCCL: 4 steps of two buckets (compressing
// from step 2, rank 2) give what the same hook gives on the CPU over Gloo, within float32 rounding
// of the GPU's matmuls; the random Qs are drawn on the CPU on both sides, so they are the same.
TEST_F(NcclOneGpu, PowerSGDHookOnCudaMatchesItsCpuRun) {
  auto cpu_pg = ddp::make_gloo_process_group(std::make_shared<ddp::testing::MemoryStore>(), 0, 1);
  const auto options = ddp::comm_hooks::PowerSGDOptions().matrix_approximation_rank(2).start_iter(2);
  auto cuda_state = std::make_shared<ddp::comm_hooks::PowerSGDState>(pg_, options);
  auto cpu_state = std::make_shared<ddp::comm_hooks::PowerSGDState>(cpu_pg, options);
  ddp::CommHook cuda_hook = ddp::comm_hooks::powersgd(cuda_state), cpu_hook = ddp::comm_hooks::powersgd(cpu_state);
  const std::vector<std::vector<int64_t>> shapes = {{64, 3, 3, 3}, {64}, {10, 64}};
  at::manual_seed(5);
  for (int step = 0; step < 4; ++step) {
    std::vector<at::Tensor> grads;
    for (const auto& s : shapes) grads.push_back(at::randn(s));
    auto run = [&](ddp::CommHook& hook, const at::Device& device) {
      std::vector<at::Tensor> flat;
      for (const auto& g : grads) flat.push_back(g.reshape({-1}));
      at::Tensor buffer = at::cat(flat).to(device);
      std::vector<at::Tensor> views;
      int64_t at = 0;
      for (const auto& g : grads) {
        views.push_back(buffer.narrow(0, at, g.numel()).view(g.sizes()));
        at += g.numel();
      }
      ddp::GradBucket bucket(0, true, buffer, views, {});
      return hook(bucket).wait().cpu();
    };
    const at::Tensor on_gpu = run(cuda_hook, at::Device(at::kCUDA, 0)), on_cpu = run(cpu_hook, at::Device(at::kCPU));
    EXPECT_TRUE(at::allclose(on_gpu, on_cpu, 1e-4, 1e-5))
        << "step " << step << ": max |diff| " << (on_gpu - on_cpu).abs().max().item<double>();
  }
  EXPECT_EQ(cuda_state->iter(), 4);
  EXPECT_GT(cuda_state->compression_stats().rate, 1.0);
}

// ZeroRedundancyOptimizer on CUDA parameters over NCCL (a group of one: the shard is the whole
// model, and its flat broadcast still goes through NCCL): 3 steps of Adam equal a plain Adam's bit for
// bit, and the state is on the GPU, where optimizer_state_bytes counts it.
TEST_F(NcclOneGpu, ZeroRedundancyOptimizerOnCudaEqualsAdam) {
  at::manual_seed(3);
  std::vector<at::Tensor> mine, plain_params;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{64, 32}, {64}, {10, 64}}) {
    at::Tensor p = at::randn(shape, on_cuda(at::kFloat));
    mine.push_back(p.clone().set_requires_grad(true));
    plain_params.push_back(p.clone().set_requires_grad(true));
  }
  auto adam = [](std::vector<torch::optim::OptimizerParamGroup> groups) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(1e-2));
  };
  ddp::ZeroRedundancyOptimizer zero(mine, adam, pg_);
  auto plain = adam({torch::optim::OptimizerParamGroup(plain_params)});
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < mine.size(); ++i) {
      at::Tensor g = at::randn(mine[i].sizes(), on_cuda(at::kFloat));
      mine[i].mutable_grad() = g.clone();
      plain_params[i].mutable_grad() = g.clone();
    }
    zero.step();
    plain->step();
    for (size_t i = 0; i < mine.size(); ++i)
      EXPECT_TRUE(at::equal(mine[i].detach().cpu(), plain_params[i].detach().cpu())) << "step " << step << " #" << i;
  }
  EXPECT_EQ(ddp::optimizer_state_bytes(zero), ddp::optimizer_state_bytes(*plain));
  EXPECT_GT(ddp::optimizer_state_bytes(zero), 0);
}

// A checkpoint is read onto the CPU; resuming a CUDA run must put the optimizer state back on the
// GPU (Checkpointer::load moves it to each parameter's device), for a plain Adam and for the shard
// of a ZeroRedundancyOptimizer: after the resume, 2 more steps equal 2 more steps of the original.
TEST_F(NcclOneGpu, CheckpointedOptimizerStateResumesOnTheGpu) {
  const std::string dir = ddp::testing::make_temp_dir("nccl-ckpt");
  auto adam = [](std::vector<torch::optim::OptimizerParamGroup> groups) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(1e-2));
  };
  for (const bool zero : {false, true}) {
    at::manual_seed(4);
    torch::nn::Linear original(8, 4), resumed(8, 4);
    original->to(at::Device(at::kCUDA, 0));
    resumed->to(at::Device(at::kCUDA, 0));
    auto make = [&](torch::nn::Linear& m) -> std::unique_ptr<torch::optim::Optimizer> {
      if (zero) return std::make_unique<ddp::ZeroRedundancyOptimizer>(m->parameters(), adam, pg_);
      return adam({torch::optim::OptimizerParamGroup(m->parameters())});
    };
    auto opt = make(original), opt2 = make(resumed);
    const at::Tensor x = at::randn({16, 8}, on_cuda(at::kFloat));
    auto step = [&](torch::nn::Linear& m, torch::optim::Optimizer& o) {
      o.zero_grad();
      m(x).pow(2).sum().backward();
      o.step();
    };
    step(original, *opt);
    step(original, *opt);
    ddp::Checkpointer ckpt(ddp::CheckpointOptions().dir(dir + (zero ? "/zero" : "/plain")), pg_);
    ddp::TrainingProgress progress;
    progress.step_done(16);
    ckpt.save(*original, opt.get(), progress);
    ASSERT_TRUE(ckpt.resume("auto", *resumed, opt2.get()).has_value());
    for (int i = 0; i < 2; ++i) {
      step(original, *opt);
      step(resumed, *opt2);  // a state left on the CPU throws here: the gradient is on the GPU
    }
    EXPECT_TRUE(at::equal(original->weight.detach().cpu(), resumed->weight.detach().cpu())) << (zero ? "zero" : "plain");
  }
  std::filesystem::remove_all(dir);
}

// In its own process: an aborted communicator must not disturb the other tests' CUDA context.
DDP_TEST_WORKER(nccl_watchdog_timeout) {
  ddp::NcclOptions options;
  options.timeout(std::chrono::milliseconds(300));
  auto pg = world_of_one(options);
  // Seconds of float64 matrix products on the current stream: the allreduce queued behind them
  // cannot finish within 300 ms, so the watchdog must abort it.
  auto a = at::randn({8192, 8192}, on_cuda(at::kDouble));
  auto scratch = at::empty_like(a);
  for (int i = 0; i < 200; ++i) at::mm_out(scratch, a, a);
  std::vector<at::Tensor> tensors{at::ones({16}, on_cuda(at::kFloat))};
  auto started = std::chrono::steady_clock::now();
  auto work = pg->allreduce(tensors);
  try {
    work->wait(std::chrono::seconds(60));
    std::fprintf(stderr, "allreduce finished although it exceeded its timeout\n");
    return 10;
  } catch (const ddp::TimeoutError& e) {
    std::string m = e.what();
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    std::fprintf(stderr, "watchdog fired after %lld ms: %s\n", static_cast<long long>(waited.count()), m.c_str());
    if (!contains(m, "allreduce #1") || !contains(m, "rank 0 of 1") || !contains(m, "300 ms")) return 11;
    if (waited > std::chrono::seconds(5)) return 12;
  }
  try {
    pg->barrier()->wait();
    std::fprintf(stderr, "the group was still usable after the abort\n");
    return 13;
  } catch (const ddp::TimeoutError& e) {
    if (!contains(e.what(), "unusable")) return 14;
  }
  return 0;
}

TEST(NcclWatchdog, AbortsAnOpThatExceedsItsTimeout) {
  DDP_REQUIRE_GPU();
  auto results = ddp::testing::run_workers("nccl_watchdog_timeout", 1);
  ddp::testing::expect_all_succeeded(results);
}

}  // namespace

// SyncBatchNorm against the real thing: 2 and 3 ranks with uneven batches must produce, on their
// rows, what PyTorch's BatchNorm2d produces on the whole batch in one process (Debian's
// python3-torch, tests/ddp/python/sync_bn_reference.py): outputs, input gradients, the sums of the
// ranks' weight and bias gradients, and the running statistics after two steps. That is the
// definition torch.nn.SyncBatchNorm implements; torch's own SyncBatchNorm cannot be the oracle
// here because it refuses CPU tensors (its kernels batch_norm_stats & co. have no CPU backend in
// 1.13 or 2.6). Then, under DistributedDataParallel, a net with SyncBatchNorm trained on 2 ranks ends
// with the weights of the same net trained with BatchNorm on the whole batch in one process.
#include <ddp/distributed_data_parallel.h>
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/sync_batch_norm.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "support/multiprocess.h"
#include "support/subprocess.h"
#include "tensor_files.h"

namespace sync_bn_test {

using ddp::testing::NamedTensors;
using ddp::testing::find_tensor;

constexpr int64_t kChannels = 4;
constexpr int kSbnSteps = 2;
// Rows per rank: uneven on purpose (the group's statistics weight each rank by its count).
std::vector<int64_t> rows_per_rank(int world) {
  return world == 2 ? std::vector<int64_t>{3, 5} : std::vector<int64_t>{2, 3, 4};
}

std::string sbn_dir() {
  const char* d = std::getenv("DDP_SBN_DIR");
  return d ? d : "";
}

int failures = 0;
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol, const std::string& what) {
  const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  if (diff <= tol && got.sizes() == want.sizes()) return;
  ++failures;
  std::cerr << "FAILED: " << what << ": max abs diff " << diff << " (tolerance " << tol << "), shapes "
            << got.sizes() << " vs " << want.sizes() << std::endl;
}

// Inputs for the oracle: per step the whole batch x and the gradient g that flows into the output
// (the loss is sum(y * g)), plus weight and bias; values far from mean 0 / variance 1.
DDP_TEST_WORKER(sbn_prepare) {
  const int world = std::stoi(std::getenv("DDP_SBN_WORLD"));
  int64_t rows = 0;
  for (int64_t r : rows_per_rank(world)) rows += r;
  torch::manual_seed(7 + world);
  NamedTensors in;
  for (int s = 0; s < kSbnSteps; ++s) {
    in.emplace_back("x" + std::to_string(s), torch::randn({rows, kChannels, 3, 3}) * 2.5 + 1.5);
    in.emplace_back("g" + std::to_string(s), torch::randn({rows, kChannels, 3, 3}));
  }
  in.emplace_back("weight", torch::randn({kChannels}));
  in.emplace_back("bias", torch::randn({kChannels}));
  ddp::testing::write_tensors(sbn_dir(), "inputs", in);
  return 0;
}

DDP_TEST_WORKER(sbn_parity) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  const auto in = ddp::testing::read_tensors(sbn_dir(), "inputs");
  const auto want = ddp::testing::read_tensors(sbn_dir(), "expected");
  const auto rows = rows_per_rank(pg->size());
  int64_t first = 0;
  for (int r = 0; r < pg->rank(); ++r) first += rows[r];
  const int64_t mine = rows[pg->rank()];

  ddp::SyncBatchNorm bn(torch::nn::BatchNormOptions(kChannels), pg);
  {
    torch::NoGradGuard no_grad;
    bn->weight.copy_(find_tensor(in, "weight"));
    bn->bias.copy_(find_tensor(in, "bias"));
  }
  bn->train();
  const double tol = 2e-5;  // float32, two summation orders of at most 45 values per channel
  for (int s = 0; s < kSbnSteps; ++s) {
    const std::string step = std::to_string(s);
    at::Tensor x = find_tensor(in, "x" + step).narrow(0, first, mine).clone().requires_grad_(true);
    at::Tensor y = bn(x);
    y.backward(find_tensor(in, "g" + step).narrow(0, first, mine));
    expect_close(y, find_tensor(want, "y" + step).narrow(0, first, mine), tol, "output, step " + step);
    expect_close(x.grad(), find_tensor(want, "dx" + step).narrow(0, first, mine), tol, "input gradient, step " + step);
    std::vector<at::Tensor> grads = {bn->weight.grad().clone(), bn->bias.grad().clone()};
    pg->allreduce(grads)->wait();
    expect_close(grads[0], find_tensor(want, "dweight" + step), tol, "sum of the weight gradients, step " + step);
    expect_close(grads[1], find_tensor(want, "dbias" + step), tol, "sum of the bias gradients, step " + step);
    bn->weight.mutable_grad().zero_();
    bn->bias.mutable_grad().zero_();
  }
  expect_close(bn->running_mean, find_tensor(want, "running_mean"), tol, "running_mean");
  expect_close(bn->running_var, find_tensor(want, "running_var"), tol, "running_var");
  if (bn->num_batches_tracked.item<int64_t>() != kSbnSteps) {
    ++failures;
    std::cerr << "FAILED: num_batches_tracked " << bn->num_batches_tracked.item<int64_t>() << std::endl;
  }
  // Eval mode normalises with the running statistics, locally, exactly as BatchNorm2d does.
  torch::nn::BatchNorm2d plain(kChannels);
  {
    torch::NoGradGuard no_grad;
    plain->weight.copy_(bn->weight);
    plain->bias.copy_(bn->bias);
    plain->running_mean.copy_(bn->running_mean);
    plain->running_var.copy_(bn->running_var);
  }
  bn->eval();
  plain->eval();
  at::Tensor x = find_tensor(in, "x0").narrow(0, first, mine);
  if (!at::equal(bn(x), plain(x))) {
    ++failures;
    std::cerr << "FAILED: in eval mode the output differs from BatchNorm2d's" << std::endl;
  }
  return failures == 0 ? 0 : 1;
}

// Bad input is a ConfigError naming it, on every rank, and never a hang: a wrong channel count
// (caught before any collective), and one value per channel in the whole group (rank 0 has one
// row, rank 1 none).
DDP_TEST_WORKER(sbn_errors) {
  auto pg = ddp::init_process_group();
  ddp::SyncBatchNorm bn(torch::nn::BatchNormOptions(kChannels), pg);
  bn->train();
  auto message_of = [&](const at::Tensor& x) -> std::string {
    try {
      bn(x);
    } catch (const ddp::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  const std::string shape = message_of(torch::randn({4, kChannels + 1, 2}));
  if (shape.find("expects input [N, 4, ...], got [4, 5, 2]") == std::string::npos) {
    ++failures;
    std::cerr << "FAILED: wrong channels gave '" << shape << "'" << std::endl;
  }
  const std::string one = message_of(torch::randn({pg->rank() == 0 ? 1 : 0, kChannels}));
  if (one.find("expected more than 1 value per channel when training, got 1 over the whole group") ==
      std::string::npos) {
    ++failures;
    std::cerr << "FAILED: one value per channel gave '" << one << "'" << std::endl;
  }
  // The group still works afterwards: rank 1's empty batch takes part with weight 0.
  at::Tensor x = pg->rank() == 0 ? torch::tensor({{1.0f}, {3.0f}}) : torch::zeros({0, 1});
  ddp::SyncBatchNorm one_channel(torch::nn::BatchNormOptions(1).momentum(1.0), pg);
  one_channel->train();
  one_channel(x);
  if (one_channel->running_mean.item<float>() != 2.0f || one_channel->running_var.item<float>() != 2.0f) {
    ++failures;
    std::cerr << "FAILED: rows {1, 3} and none gave running mean " << one_channel->running_mean.item<float>()
              << ", var " << one_channel->running_var.item<float>() << " (want 2 and 2)" << std::endl;
  }
  return failures == 0 ? 0 : 1;
}

// conv -> norm -> relu -> linear: the norm is SyncBatchNorm under DDP, BatchNorm2d in the reference.
template <typename Norm>
struct SbnNetImpl : torch::nn::Module {
  explicit SbnNetImpl(Norm n) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, kChannels, 3).padding(1)));
    norm = register_module("norm", n);
    fc = register_module("fc", torch::nn::Linear(kChannels * 4 * 4, 5));
  }
  at::Tensor forward(const at::Tensor& x) { return fc(torch::relu(norm(conv(x))).flatten(1)); }
  torch::nn::Conv2d conv{nullptr};
  Norm norm{nullptr};
  torch::nn::Linear fc{nullptr};
};

// 2 ranks x 4 images under DDP with SyncBatchNorm == 8 images in one process with BatchNorm2d,
// after 3 SGD steps: the backward's allreduces interleave with DDP's bucket allreduces on one
// group, in the same order on every rank.
DDP_TEST_WORKER(sbn_ddp) {
  auto pg = ddp::init_process_group();
  torch::set_num_threads(1);
  constexpr int64_t kPerRank = 4;
  torch::manual_seed(11);
  auto ours = std::make_shared<SbnNetImpl<ddp::SyncBatchNorm>>(ddp::SyncBatchNorm(torch::nn::BatchNormOptions(kChannels), pg));
  auto reference = std::make_shared<SbnNetImpl<torch::nn::BatchNorm2d>>(torch::nn::BatchNorm2d(kChannels));
  {
    torch::NoGradGuard no_grad;
    auto from = ours->named_parameters();
    for (auto& p : reference->named_parameters()) p.value().copy_(from[p.key()]);
  }
  ddp::DistributedDataParallel<std::shared_ptr<SbnNetImpl<ddp::SyncBatchNorm>>> model(ours, pg);
  torch::optim::SGD opt_ours(ours->parameters(), 0.1), opt_ref(reference->parameters(), 0.1);
  for (int s = 0; s < 3; ++s) {
    torch::manual_seed(100 + s);
    at::Tensor x = torch::randn({2 * kPerRank, 3, 4, 4}) * 2 + 1;
    at::Tensor y = torch::randint(0, 5, {2 * kPerRank});
    opt_ours.zero_grad();
    torch::nn::functional::cross_entropy(model(x.narrow(0, pg->rank() * kPerRank, kPerRank)),
                                         y.narrow(0, pg->rank() * kPerRank, kPerRank))
        .backward();
    opt_ours.step();
    opt_ref.zero_grad();
    torch::nn::functional::cross_entropy(reference->forward(x), y).backward();
    opt_ref.step();
  }
  auto mine = ours->named_parameters();
  for (auto& p : reference->named_parameters())
    expect_close(mine[p.key()], p.value(), 1e-5, "parameter " + p.key() + " after 3 steps");
  auto buffers = ours->named_buffers();
  for (auto& b : reference->named_buffers())
    expect_close(buffers[b.key()], b.value(), 1e-5, "buffer " + b.key() + " after 3 steps");
  return failures == 0 ? 0 : 1;
}

void run_parity(int world) {
  const std::string dir = ddp::testing::make_temp_dir("ddp-sync-bn");
  ddp::testing::WorkerOptions o;
  o.timeout = std::chrono::seconds(90);
  o.env["DDP_SBN_DIR"] = dir;
  o.env["DDP_SBN_WORLD"] = std::to_string(world);
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("sbn_prepare", 1, o));
  ddp::testing::Subprocess python({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/ddp/python/sync_bn_reference.py", dir},
                                  {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(python.wait(std::chrono::seconds(90)), 0) << python.output();
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("sbn_parity", world, o));
  std::filesystem::remove_all(dir);
}

TEST(SyncBatchNorm, MatchesTorchBatchNormOnTheWholeBatch2Ranks) { run_parity(2); }
TEST(SyncBatchNorm, MatchesTorchBatchNormOnTheWholeBatch3Ranks) { run_parity(3); }

ddp::testing::WorkerOptions two_minutes() {
  ddp::testing::WorkerOptions o;
  o.timeout = std::chrono::minutes(2);
  return o;
}
TEST(SyncBatchNorm, BadInputIsAConfigErrorOnEveryRank) {
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("sbn_errors", 2, two_minutes()));
}
TEST(SyncBatchNorm, UnderDdpTrainsLikeBatchNormOnTheWholeBatch) {
  ddp::testing::expect_all_succeeded(ddp::testing::run_workers("sbn_ddp", 2, two_minutes()));
}

// Without a group it is torch::nn::BatchNorm2d, bit for bit, with the same state dict names.
TEST(SyncBatchNorm, WithoutAGroupIsBatchNorm) {
  torch::manual_seed(3);
  ddp::SyncBatchNorm ours(torch::nn::BatchNormOptions(kChannels).momentum(0.3), nullptr);
  torch::nn::BatchNorm2d plain(torch::nn::BatchNormOptions(kChannels).momentum(0.3));
  std::vector<std::string> ours_names, plain_names;
  for (auto& p : ours->named_parameters()) ours_names.push_back(p.key());
  for (auto& b : ours->named_buffers()) ours_names.push_back(b.key());
  for (auto& p : plain->named_parameters()) plain_names.push_back(p.key());
  for (auto& b : plain->named_buffers()) plain_names.push_back(b.key());
  EXPECT_EQ(ours_names, plain_names);
  for (int s = 0; s < 3; ++s) {
    at::Tensor x = torch::randn({5, kChannels, 3, 3}) * 3 + 1;
    EXPECT_TRUE(at::equal(ours(x), plain(x))) << "train step " << s;
  }
  EXPECT_TRUE(at::equal(ours->running_mean, plain->running_mean));
  EXPECT_TRUE(at::equal(ours->running_var, plain->running_var));
  ours->eval();
  plain->eval();
  at::Tensor x = torch::randn({2, kChannels, 3, 3});
  EXPECT_TRUE(at::equal(ours(x), plain(x)));
}

}  // namespace sync_bn_test

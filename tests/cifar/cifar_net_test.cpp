// The seed's Net: names, shapes, parameter count, and the fast CPU kernels against plain LibTorch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/cifar_net.h"
#include "models/cpu_fast_ops.h"

using ddp::models::CifarNet;
using ddp::models::CifarNetOptions;

TEST(CifarNet, SameNamesAndShapesAsThePythonNet) {
  CifarNet net;
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"conv1.weight", {6, 3, 5, 5}}, {"conv1.bias", {6}},   {"conv2.weight", {16, 6, 5, 5}}, {"conv2.bias", {16}},
      {"fc1.weight", {120, 400}},     {"fc1.bias", {120}},   {"fc2.weight", {84, 120}},       {"fc2.bias", {84}},
      {"fc3.weight", {10, 84}},       {"fc3.bias", {10}}};
  auto named = net->named_parameters();
  ASSERT_EQ(named.size(), expected.size());
  int64_t total = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(named[i].key(), expected[i].first);
    EXPECT_EQ(named[i].value().sizes().vec(), expected[i].second);
    total += named[i].value().numel();
  }
  EXPECT_EQ(total, 62006);
  EXPECT_EQ(net->named_buffers().size(), 0u);
  auto children = net->named_children();
  std::vector<std::string> names;
  for (auto& c : children) names.push_back(c.key());
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "pool", "conv2", "fc1", "fc2", "fc3"}));
}

TEST(CifarNet, FastKernelsMatchPlainOpsForwardAndBackward) {
  torch::manual_seed(0);
  CifarNet fast(CifarNetOptions().fast_cpu_kernels(true));
  CifarNet plain(CifarNetOptions().fast_cpu_kernels(false));
  {
    torch::NoGradGuard g;
    auto src = fast->parameters(), dst = plain->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  for (int64_t batch : {64, 5}) {  // 5: oneDNN's 1x1 path is skipped for small single-threaded batches
    SCOPED_TRACE(batch);
    auto x = torch::randn({batch, 3, 32, 32});
    auto y = torch::randint(0, 10, {batch});
    fast->zero_grad();
    plain->zero_grad();
    auto out_fast = fast->forward(x), out_plain = plain->forward(x);
    EXPECT_TRUE(torch::allclose(out_fast, out_plain, 1e-5, 1e-6));
    torch::nn::functional::cross_entropy(out_fast, y).backward();
    torch::nn::functional::cross_entropy(out_plain, y).backward();
    auto gf = fast->parameters(), gp = plain->parameters();
    for (size_t i = 0; i < gf.size(); ++i)
      EXPECT_TRUE(torch::allclose(gf[i].grad(), gp[i].grad(), 1e-4, 1e-6)) << fast->named_parameters()[i].key();
  }
}

TEST(CpuFastOps, ReluMaxPoolMatchesReferenceIncludingTiesAndNegatives) {
  torch::manual_seed(1);
  // Small integers: many ties and many all-negative windows; odd sizes drop the last row/column.
  for (auto sizes : {std::vector<int64_t>{3, 4, 8, 8}, std::vector<int64_t>{2, 3, 7, 9}}) {
    auto base = torch::randint(-3, 3, sizes).to(torch::kFloat);
    auto a = base.clone().requires_grad_(true), b = base.clone().requires_grad_(true);
    auto out_a = ddp::models::relu_max_pool2x2(a);
    auto out_b = torch::max_pool2d(torch::relu(b), {2, 2}, {2, 2});
    ASSERT_TRUE(torch::equal(out_a, out_b));
    auto g = torch::randn(out_a.sizes());
    out_a.backward(g);
    out_b.backward(g);
    EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
  }
}

TEST(CpuFastOps, LinearMatchesReference) {
  torch::manual_seed(2);
  auto x = torch::randn({32, 400}, torch::requires_grad());
  auto w = torch::randn({120, 400}, torch::requires_grad());
  auto b = torch::randn({120}, torch::requires_grad());
  auto x2 = x.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true),
       b2 = b.detach().clone().requires_grad_(true);
  auto o1 = ddp::models::linear_onednn(x, w, b), o2 = torch::nn::functional::linear(x2, w2, b2);
  EXPECT_TRUE(torch::allclose(o1, o2, 1e-4, 1e-4));
  auto g = torch::randn(o1.sizes());
  o1.backward(g);
  o2.backward(g);
  EXPECT_TRUE(torch::allclose(x.grad(), x2.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(w.grad(), w2.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(b.grad(), b2.grad(), 1e-4, 1e-4));
}

// The seed's Net: names, shapes and parameter count, as in Python.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/cifar_net.h"

using ddp::models::CifarNet;

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

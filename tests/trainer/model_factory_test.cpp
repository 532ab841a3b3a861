// The model factory: every name builds the model the trainers used to construct by hand (same
// weights from the same seed, same output shapes), and options a model cannot take are refused.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "models/cifar_net.h"
#include "models/model_factory.h"
#include "models/resnet.h"
#include "models/state_dict.h"
#include "trainer/step_end.h"

namespace fs = std::filesystem;
using ddp::models::make_model;
using ddp::models::ModelOptions;

namespace {

// Same names, shapes and values, in the same order.
void expect_same_state(const torch::nn::Module& a, const torch::nn::Module& b) {
  auto x = ddp::models::state_dict_in_order(a), y = ddp::models::state_dict_in_order(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].first, y[i].first);
    EXPECT_TRUE(x[i].second.equal(y[i].second)) << x[i].first;
  }
}

}  // namespace

TEST(ModelFactory, NamesAndOutputShapes) {
  EXPECT_EQ(ddp::models::model_names(), (std::vector<std::string>{"net", "resnet18", "resnet34", "resnet50"}));
  torch::NoGradGuard no_grad;
  auto net = make_model(ModelOptions("net")).module;
  net->eval();
  EXPECT_EQ(net->forward(torch::zeros({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  auto cifar = make_model(ModelOptions("resnet18").small_images(true)).module;
  cifar->eval();
  EXPECT_EQ(cifar->forward(torch::zeros({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  auto xray = make_model(ModelOptions("resnet34").in_channels(1).num_classes(11)).module;
  xray->eval();
  EXPECT_EQ(xray->forward(torch::zeros({1, 1, 64, 64})).sizes(), (std::vector<int64_t>{1, 11}));
}

TEST(ModelFactory, SeededModelsAreTheOnesTheTrainersBuiltByHand) {
  torch::manual_seed(7);
  auto built = make_model(ModelOptions("net")).module;
  torch::manual_seed(7);
  ddp::models::CifarNet direct;
  expect_same_state(*built, *direct);

  torch::manual_seed(7);
  auto resnet = make_model(ModelOptions("resnet18").small_images(true)).module;
  torch::manual_seed(7);
  ddp::models::ResNet by_hand(ddp::models::ResNetOptions(ddp::models::ResNetArch::kResNet18).num_classes(10).cifar_stem(true));
  expect_same_state(*resnet, *by_hand);
}

TEST(ModelFactory, FreezeBackboneAndPretrained) {
  const fs::path dir = fs::temp_directory_path() / ("ddp-factory-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  torch::manual_seed(1);
  auto source = make_model(ModelOptions("resnet18").in_channels(1).num_classes(11)).module;
  // save_model: <dir>/model.pt in Python's state_dict order, which the factory loads back.
  const std::string path = ddp::trainer::save_model(*source, dir.string());
  EXPECT_EQ(path, (dir / "model.pt").string());
  auto loaded = make_model(ModelOptions("resnet18").in_channels(1).num_classes(11).pretrained(path).freeze_backbone(true));
  ASSERT_TRUE(loaded.pretrained.has_value());
  EXPECT_TRUE(loaded.pretrained->kept.empty());
  expect_same_state(*source, *loaded.module);
  for (const auto& p : loaded.module->named_parameters())
    EXPECT_EQ(p.value().requires_grad(), p.key().rfind("fc.", 0) == 0) << p.key();
  fs::remove_all(dir);
}

TEST(ModelFactory, OptionsAModelCannotTakeAreConfigErrors) {
  EXPECT_THROW(make_model(ModelOptions("vgg")), ddp::ConfigError);
  EXPECT_THROW(make_model(ModelOptions("resnet101")), ddp::ConfigError);
  EXPECT_THROW(make_model(ModelOptions("net").in_channels(1)), ddp::ConfigError);
  EXPECT_THROW(make_model(ModelOptions("net").num_classes(11)), ddp::ConfigError);
  EXPECT_THROW(make_model(ModelOptions("net").freeze_backbone(true)), ddp::ConfigError);
}

// Our ResNet family against torchvision (Debian's /usr/bin/python3): the same names and shapes, the
// same parameter order, and the same outputs once a converted torchvision state_dict is loaded.
#include "models/resnet.h"
#include "models/state_dict.h"
#include "support/multiprocess.h"
#include "support/subprocess.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ddp::models;
using ddp::testing::Subprocess;

namespace {

const std::string kConvert = std::string(DDP_SOURCE_DIR) + "/tools/convert_torchvision_resnet.py";

// Runs the conversion script with `args`; returns its output (fails the test on a non-zero exit).
std::string run_convert(std::vector<std::string> args) {
  std::vector<std::string> argv = {DDP_PYTHON, kConvert};
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess p(argv);
  int status = p.wait(std::chrono::seconds(120));
  EXPECT_EQ(status, 0) << p.output();
  return p.output();
}

struct TorchvisionKeys {
  std::map<std::string, std::string> shapes;  // name -> "64x1x7x7"
  std::vector<std::string> param_order;
};

TorchvisionKeys parse_keys(const std::string& out) {
  TorchvisionKeys k;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first, rest;
    words >> first;
    if (first == "#params") {
      while (words >> rest) k.param_order.push_back(rest);
    } else if (!first.empty() && (words >> rest)) {
      k.shapes[first] = rest;
    }
  }
  return k;
}

std::string shape_of(const at::Tensor& t) {
  if (t.dim() == 0) return "scalar";
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "x" : "") + std::to_string(t.size(i));
  return s;
}

void expect_same_layout(ResNet& net, const TorchvisionKeys& tv) {
  std::map<std::string, std::string> ours;
  for (auto& [name, t] : state_dict_of(*net)) ours[name] = shape_of(t);
  ASSERT_FALSE(tv.shapes.empty());
  EXPECT_EQ(ours, tv.shapes);
  std::vector<std::string> order;
  for (auto& item : net->named_parameters()) order.push_back(item.key());
  EXPECT_EQ(order, tv.param_order);
}

std::string temp_file(const std::string& name) { return ddp::testing::make_temp_dir("ranzcr-resnet") + "/" + name; }

}  // namespace

TEST(ResNet, Resnet18NamesAndShapesMatchTorchvision) {
  ResNet net(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  auto tv = parse_keys(run_convert({"--arch", "resnet18", "--random-init", "--num-classes", "11",
                                    "--in-channels", "1", "--print-keys"}));
  expect_same_layout(net, tv);
  EXPECT_EQ(tv.shapes.at("conv1.weight"), "64x1x7x7");
  EXPECT_EQ(tv.shapes.at("fc.weight"), "11x512");
}

TEST(ResNet, Resnet34And50NamesAndShapesMatchTorchvision) {
  for (auto arch : {ResNetArch::kResNet34, ResNetArch::kResNet50}) {
    ResNet net(ResNetOptions(arch).in_channels(1).num_classes(11));
    auto tv = parse_keys(run_convert({"--arch", to_string(arch), "--random-init", "--num-classes", "11",
                                      "--in-channels", "1", "--print-keys"}));
    SCOPED_TRACE(to_string(arch));
    expect_same_layout(net, tv);
  }
}

TEST(ResNet, CifarStemNamesAndShapes) {
  ResNet net(ResNetOptions(ResNetArch::kResNet18).num_classes(10).cifar_stem(true));
  auto tv = parse_keys(run_convert({"--arch", "resnet18", "--random-init", "--num-classes", "10",
                                    "--in-channels", "3", "--cifar-stem", "--print-keys"}));
  expect_same_layout(net, tv);
  EXPECT_EQ(tv.shapes.at("conv1.weight"), "64x3x3x3");
  // 32x32 in, no stride in the stem: layer4 sees 4x4; output is [N, 10].
  net->eval();
  EXPECT_EQ(net->forward(at::randn({2, 3, 32, 32})).sizes(), at::IntArrayRef({2, 10}));
}

TEST(ResNet, ForwardShapesAndFeatureDim) {
  ResNet r18(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  ResNet r50(ResNetOptions(ResNetArch::kResNet50).in_channels(1).num_classes(11));
  EXPECT_EQ(r18->feature_dim(), 512);
  EXPECT_EQ(r50->feature_dim(), 2048);
  auto x = at::randn({3, 1, 64, 64});
  EXPECT_EQ(r18->forward(x).sizes(), at::IntArrayRef({3, 11}));
  EXPECT_EQ(r50->forward(x).sizes(), at::IntArrayRef({3, 11}));
  EXPECT_THROW(r18->forward(at::randn({3, 3, 64, 64})), ddp::ConfigError);
  EXPECT_THROW(parse_resnet_arch("resnet101"), ddp::ConfigError);
  EXPECT_THROW(ResNet(ResNetOptions().num_classes(0)), ddp::ConfigError);
}

TEST(ResNet, FreezeBackboneLeavesOnlyTheHeadTrainable) {
  ResNet net(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  net->set_backbone_trainable(false);
  std::vector<std::string> trainable;
  for (auto& item : net->named_parameters()) {
    if (item.value().requires_grad()) trainable.push_back(item.key());
  }
  EXPECT_EQ(trainable, (std::vector<std::string>{"fc.weight", "fc.bias"}));
  auto loss = net->forward(at::randn({2, 1, 64, 64})).sum();
  loss.backward();
  EXPECT_TRUE(net->head_parameters()[0].grad().defined());
  EXPECT_FALSE(net->backbone_parameters()[0].grad().defined());
}

// A randomly initialised torchvision resnet18 with random BN statistics, converted to 1 channel the
// way docs/RANZCR.md says; our model loaded from that file gives torchvision's outputs.
TEST(ResNet, ConvertedTorchvisionWeightsGiveTorchvisionOutputs) {
  for (auto arch : {ResNetArch::kResNet18, ResNetArch::kResNet50}) {
    SCOPED_TRACE(to_string(arch));
    const std::string weights = temp_file("weights.pt"), reference = temp_file("reference.pt");
    run_convert({"--arch", to_string(arch), "--random-init", "--seed", "3", "--num-classes", "11",
                 "--in-channels", "1", "--randomize-bn", "--out", weights, "--reference-out", reference});
    ResNet net(ResNetOptions(arch).in_channels(1).num_classes(11));
    auto report = load_state_dict(*net, weights);
    EXPECT_TRUE(report.kept.empty()) << report.summary();
    EXPECT_TRUE(report.adapted.empty()) << report.summary();
    EXPECT_EQ(report.loaded.size(), state_dict_of(*net).size());
    auto ref = read_state_dict(reference);
    net->eval();
    auto out = net->forward(ref.at("input"));
    EXPECT_TRUE(at::allclose(out, ref.at("output"), 1e-4, 1e-4))
        << "max diff " << (out - ref.at("output")).abs().max().item<double>();
  }
}

// ImageNet-shaped file (3 channels, 1000 classes): the stem is averaged in C++, the head is kept.
TEST(ResNet, LoaderAdaptsRgbStemAndKeepsMismatchedHead) {
  const std::string rgb = temp_file("rgb.pt"), gray = temp_file("gray.pt"), reference = temp_file("ref.pt");
  run_convert({"--arch", "resnet18", "--random-init", "--seed", "5", "--in-channels", "3",
               "--randomize-bn", "--out", rgb});
  run_convert({"--arch", "resnet18", "--random-init", "--seed", "5", "--in-channels", "1", "--drop-fc",
               "--randomize-bn", "--out", gray, "--reference-out", reference});
  ResNet a(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  auto ra = load_state_dict(*a, rgb);
  EXPECT_EQ(ra.adapted, std::vector<std::string>{"conv1.weight"});
  ASSERT_EQ(ra.kept.size(), 2u) << ra.summary();
  EXPECT_NE(ra.kept[0].find("fc.bias"), std::string::npos);
  ResNet b(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  auto rb = load_state_dict(*b, gray);  // fc dropped: kept
  EXPECT_EQ(rb.kept, (std::vector<std::string>{"fc.bias", "fc.weight"}));
  auto ref = read_state_dict(reference);
  a->eval();
  b->eval();
  auto fa = a->features(ref.at("input")), fb = b->features(ref.at("input"));
  EXPECT_TRUE(at::allclose(fa, ref.at("output"), 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(fb, ref.at("output"), 1e-4, 1e-4));
}

TEST(ResNet, LoaderRejectsBadFiles) {
  ResNet net(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  auto before = net->named_parameters()["layer1.0.conv1.weight"].clone();
  EXPECT_THROW(load_state_dict(*net, "/nonexistent/weights.pt"), ddp::DataError);
  const std::string garbage = temp_file("garbage.pt");
  std::ofstream(garbage) << "this is not a zip archive";
  EXPECT_THROW(load_state_dict(*net, garbage), ddp::DataError);
  // A resnet34 state_dict into a resnet18: extra entries are an error naming them.
  const std::string r34 = temp_file("r34.pt");
  ResNet other(ResNetOptions(ResNetArch::kResNet34).in_channels(1).num_classes(11));
  write_state_dict(state_dict_of(*other), r34);
  try {
    load_state_dict(*net, r34);
    FAIL() << "expected DataError";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("layer1.2."), std::string::npos) << e.what();
  }
  // A wrong shape names the entry and both shapes, and leaves the model untouched.
  auto sd = state_dict_of(*net);
  sd["layer1.0.conv1.weight"] = at::zeros({64, 64, 1, 1});
  const std::string bad = temp_file("bad.pt");
  write_state_dict(sd, bad);
  try {
    load_state_dict(*net, bad);
    FAIL() << "expected DataError";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("layer1.0.conv1.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[64, 64, 3, 3]"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(at::equal(before, net->named_parameters()["layer1.0.conv1.weight"]));
}

TEST(ResNet, WriteReadRoundTripIsReadableByPython) {
  ResNet net(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  const std::string path = temp_file("ours.pt");
  write_state_dict(state_dict_of(*net), path);
  ResNet copy(ResNetOptions(ResNetArch::kResNet18).in_channels(1).num_classes(11));
  load_state_dict(*copy, path);
  for (auto& [name, t] : state_dict_of(*copy)) EXPECT_TRUE(at::equal(t, state_dict_of(*net).at(name))) << name;
  Subprocess py({DDP_PYTHON, "-c",
                 "import sys, torch; sd = torch.load(sys.argv[1], weights_only=True); print(len(sd), tuple(sd['conv1.weight'].shape))",
                 path});
  ASSERT_EQ(py.wait(std::chrono::seconds(60)), 0) << py.output();
  EXPECT_NE(py.output().find("122 (64, 1, 7, 7)"), std::string::npos) << py.output();
}

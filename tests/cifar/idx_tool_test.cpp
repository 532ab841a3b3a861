// make_cifar10_from_idx on the real Fashion-MNIST files that Debian's dataset-fashion-mnist ships:
// every image and label it writes, in both layouts, equals what numpy decodes from the source.
#include <gtest/gtest.h>

#include "cifar_test_util.h"
#include "support/ci.h"
#include "support/subprocess.h"

namespace {
constexpr const char* kFashion = "/usr/share/datasets/fashion-mnist";
}

TEST(MakeCifar10FromIdx, WritesTheDebianFashionMnistFilesExactly) {
  if (access((std::string(kFashion) + "/t10k-labels-idx1-ubyte.gz").c_str(), R_OK) != 0)
    DDP_SKIP_OR_FAIL_IN_CI("Debian's dataset-fashion-mnist is not installed");
  cifar_test::TempDir out("fashion");
  ddp::testing::Subprocess tool({DDP_MAKE_CIFAR10_FROM_IDX, "--out", out.path, "--train", "3000", "--test", "1000"});
  ASSERT_EQ(tool.wait(std::chrono::seconds(60)), 0) << tool.output();
  EXPECT_NE(tool.output().find("wrote 3000 training and 1000 test images"), std::string::npos) << tool.output();
  ddp::testing::Subprocess py({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/cifar/python/check_idx_import.py", kFashion,
                               out.path, "3000", "1000"});
  ASSERT_EQ(py.wait(std::chrono::seconds(120)), 0) << py.output();
  EXPECT_NE(py.output().find("OK"), std::string::npos) << py.output();
}

TEST(MakeCifar10FromIdx, BadFlagsAndMissingFilesExitTwoNamingTheProblem) {
  cifar_test::TempDir empty("idx-empty");
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  } cases[] = {
      {{"--out", empty.path + "/o", "--source", empty.path}, "train-images-idx3-ubyte[.gz]: not found"},
      {{"--out", empty.path + "/o", "--train", "7"}, "not a multiple of 5"},
      {{"--out", empty.path + "/o", "--train", "-5"}, "--train -5 is negative"},
      {{"--out", empty.path + "/o", "--layout", "png"}, "--layout must be bin, py or both"},
      {{"--out", empty.path + "/o", "--class-names", "a,b"}, "needs 10 names, got 2"},
      {{"--source", kFashion}, "--out is required"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {DDP_MAKE_CIFAR10_FROM_IDX};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    ddp::testing::Subprocess p(argv);
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 2) << c.fragment << "\n" << p.output();
    EXPECT_NE(p.output().find(c.fragment), std::string::npos) << p.output();
  }
}

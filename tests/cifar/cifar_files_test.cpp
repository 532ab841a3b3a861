// Whole-dataset loading: layout detection, both layouts agree, and each broken-folder case.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "cifar_test_util.h"
#include "data/cifar/cifar_dataset.h"
#include "data/cifar/cifar_synthetic.h"
#include "support/subprocess.h"

using cifar_test::expect_data_error;
using cifar_test::TempDir;
using ddp::data::cifar::CifarLayout;
using ddp::data::cifar::load_cifar10;
namespace fs = std::filesystem;

TEST(CifarDataset, BothLayoutsDecodeToTheSameTensors) {
  const std::string root = cifar_test::small_dataset();
  auto bin = load_cifar10(root + "/cifar-10-batches-bin");  // pointing at the batch folder itself
  auto py = load_cifar10(root + "/cifar-10-batches-py");
  EXPECT_EQ(bin.location.layout, CifarLayout::kBinary);
  EXPECT_EQ(py.location.layout, CifarLayout::kPython);
  EXPECT_EQ(bin.train.size(), 500);
  EXPECT_EQ(bin.test.size(), 200);
  EXPECT_EQ(bin.train.images.sizes(), (std::vector<int64_t>{500, 3, 32, 32}));
  EXPECT_EQ(bin.train.images.scalar_type(), at::kByte);
  EXPECT_EQ(bin.train.labels.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(bin.train.images, py.train.images));
  EXPECT_TRUE(at::equal(bin.train.labels, py.train.labels));
  EXPECT_TRUE(at::equal(bin.test.images, py.test.images));
  EXPECT_TRUE(at::equal(bin.test.labels, py.test.labels));
  // The images are what the generator made, in file order.
  auto gen = ddp::data::cifar::generate_synthetic_split(7, 0, 500);
  EXPECT_EQ(std::memcmp(bin.train.images.data_ptr<uint8_t>(), gen.pixels.data(), gen.pixels.size()), 0);
  EXPECT_EQ(bin.train.labels[17].item<int64_t>(), gen.labels[17]);
  EXPECT_LE(bin.train.labels.max().item<int64_t>(), 9);
}

TEST(CifarDataset, AutoDetectPrefersBinaryAndFallsBackToPython) {
  const std::string root = cifar_test::small_dataset();
  EXPECT_EQ(ddp::data::cifar::locate_cifar10(root).layout, CifarLayout::kBinary);
  TempDir only_py("cifar-py-only");
  cifar_test::copy_tree(root + "/cifar-10-batches-py", only_py.path + "/cifar-10-batches-py");
  auto d = load_cifar10(only_py.path);
  EXPECT_EQ(d.location.layout, CifarLayout::kPython);
  EXPECT_EQ(d.train.size(), 500);
}

TEST(CifarDataset, MissingFolderOrFilesAreDataErrors) {
  TempDir empty("cifar-empty");
  expect_data_error([&] { load_cifar10(empty.path); }, {empty.path, "no CIFAR-10 data", "cifar-10-batches-bin"});
  expect_data_error([&] { load_cifar10(empty.path + "/nope"); }, {"nope", "not found"});

  for (std::string layout : {"bin", "py"}) {
    SCOPED_TRACE(layout);
    TempDir d("cifar-missing");
    const std::string folder = d.path + "/cifar-10-batches-" + layout;
    cifar_test::copy_tree(cifar_test::small_dataset() + "/cifar-10-batches-" + layout, folder);
    const std::string victim = folder + (layout == "bin" ? "/test_batch.bin" : "/data_batch_4");
    fs::remove(victim);
    expect_data_error([&] { load_cifar10(d.path); }, {victim, "file not found"});
  }
}

TEST(CifarDataset, TruncatedCorruptAndInconsistentFilesAreNamed) {
  for (std::string layout : {"bin", "py"}) {
    SCOPED_TRACE(layout);
    TempDir d("cifar-corrupt");
    const std::string folder = d.path + "/cifar-10-batches-" + layout;
    const std::string src = cifar_test::small_dataset() + "/cifar-10-batches-" + layout;
    const std::string suffix = layout == "bin" ? ".bin" : "";
    cifar_test::copy_tree(src, folder);
    const std::string b3 = folder + "/data_batch_3" + suffix;
    auto good = cifar_test::read_bytes(b3);

    auto cut = good;
    cut.resize(good.size() - 10);
    cifar_test::write_bytes(b3, cut);
    expect_data_error([&] { load_cifar10(d.path); }, {b3, "truncated"});

    if (layout == "bin") {
      auto bad = good;
      bad[3073 * 5] = 200;  // label byte of record 5
      cifar_test::write_bytes(b3, bad);
      expect_data_error([&] { load_cifar10(d.path); }, {b3, "record 5", "label 200"});
    } else {
      auto bad = good;
      bad[2] = 0xfe;
      cifar_test::write_bytes(b3, bad);
      expect_data_error([&] { load_cifar10(d.path); }, {b3, "unsupported pickle opcode 0xfe"});
    }

    // A batch with fewer records than the others: valid on its own, inconsistent as a set.
    auto other = d.path + "/other";
    ddp::data::cifar::write_synthetic_cifar10(ddp::data::cifar::SyntheticCifarOptions().out_dir(other).train(250).test(10));
    fs::copy_file(other + "/cifar-10-batches-" + layout + "/data_batch_1" + suffix, b3,
                  fs::copy_options::overwrite_existing);
    expect_data_error([&] { load_cifar10(d.path); }, {b3, "50 records", "same number"});
  }
}

TEST(SyntheticCifar, PythonAndTorchvisionReadThePythonLayout) {
  ddp::testing::Subprocess py({DDP_PYTHON, std::string(DDP_SOURCE_DIR) + "/tests/cifar/python/check_synthetic.py",
                               cifar_test::small_dataset()});
  int status = py.wait(std::chrono::seconds(90));
  EXPECT_EQ(status, 0) << py.output();
  EXPECT_NE(py.output().find("OK"), std::string::npos) << py.output();
}

TEST(SyntheticCifar, DeterministicBalancedAndValidated) {
  auto a = ddp::data::cifar::generate_synthetic_split(3, 0, 2000);
  auto b = ddp::data::cifar::generate_synthetic_split(3, 0, 2000);
  auto c = ddp::data::cifar::generate_synthetic_split(4, 0, 2000);
  EXPECT_TRUE(a.pixels == b.pixels && a.labels == b.labels);
  EXPECT_FALSE(a.pixels == c.pixels);
  std::vector<int> per_class(10);
  for (auto l : a.labels) per_class.at(l)++;
  for (int k = 0; k < 10; ++k) EXPECT_GT(per_class[k], 120) << "class " << k;  // ~200 each
  using ddp::data::cifar::SyntheticCifarOptions;
  TempDir d("cifar-syn-bad");
  EXPECT_THROW(ddp::data::cifar::write_synthetic_cifar10(SyntheticCifarOptions().out_dir(d.path).train(12)), ddp::ConfigError);
  EXPECT_THROW(ddp::data::cifar::write_synthetic_cifar10(SyntheticCifarOptions().out_dir(d.path).train(10).test(0)), ddp::ConfigError);
  EXPECT_THROW(ddp::data::cifar::write_synthetic_cifar10(SyntheticCifarOptions().train(10)), ddp::ConfigError);
}

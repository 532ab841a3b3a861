// Real images into the CIFAR-10 layout: the IDX parser, gzip, the 28x28 -> 32x32x3 conversion, and
// the whole path read back through the CIFAR-10 loader.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "cifar_test_util.h"
#include "data/cifar/cifar_dataset.h"
#include "data/cifar/cifar_from_idx.h"
#include "data/common/gzip.h"
#include "data/idx/idx_file.h"

using cifar_test::expect_data_error;
using cifar_test::TempDir;
using ddp::data::IdxArray;
using ddp::data::parse_idx;

namespace {

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values, uint8_t type = 8) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
  b.insert(b.end(), values.begin(), values.end());
  return b;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& raw) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, raw.size()) + 64);
  z.next_in = const_cast<uint8_t*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

IdxArray parse(const std::vector<uint8_t>& b) { return parse_idx(b.data(), b.size(), "f.idx"); }

// n images of rows x cols where pixel (i, y, x) = (i * 31 + y * 7 + x) % 251 + 1 (never the padding's 0).
IdxArray images(uint32_t n, uint32_t rows, uint32_t cols) {
  std::vector<uint8_t> v;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t y = 0; y < rows; ++y)
      for (uint32_t x = 0; x < cols; ++x) v.push_back(static_cast<uint8_t>((i * 31 + y * 7 + x) % 251 + 1));
  return parse(idx_bytes({n, rows, cols}, v));
}

}  // namespace

TEST(IdxFile, ParsesDimsAndValues) {
  IdxArray a = parse(idx_bytes({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.dims, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(a.values, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(parse(idx_bytes({0}, {})).values.empty());  // an empty array is well formed
}

TEST(IdxFile, EachMalformedHeaderIsADataErrorNamingIt) {
  expect_data_error([] { parse({0, 0, 8}); }, {"f.idx", "too short"});
  expect_data_error([] { parse({1, 0, 8, 1, 0, 0, 0, 0}); }, {"f.idx", "not an IDX file"});
  expect_data_error([] { parse(idx_bytes({1}, {0, 0, 0, 0}, 0x0d)); }, {"f.idx", "type 13", "not supported"});
  expect_data_error([] { parse({0, 0, 8, 0}); }, {"0 dimensions"});
  expect_data_error([] { parse(idx_bytes({1, 1, 1, 1, 1}, {7})); }, {"5 dimensions"});
  expect_data_error([] { parse({0, 0, 8, 2, 0, 0, 0, 1}); }, {"too short for an IDX header of 2 dimensions"});
  expect_data_error([] { parse(idx_bytes({2, 3}, {1, 2, 3, 4, 5})); }, {"promises 6 elements", "holds 5 bytes"});
  expect_data_error([] { parse(idx_bytes({2, 3}, {1, 2, 3, 4, 5, 6, 7})); }, {"promises 6 elements", "holds 7 bytes"});
}

// Four 32-bit dimensions multiply to as much as 2^128; a product that wrapped in 64 bits could come
// out equal to the real length and let a forged header through. The saturated product cannot.
TEST(IdxFile, HugeDimensionsCannotWrapToTheFileLength) {
  expect_data_error([] { parse(idx_bytes({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {1})); }, {"more than"});
  // 2^32 * 2^32 wraps to 0 in 64 bits; with no payload a wrapping check would accept it.
  expect_data_error([] { parse(idx_bytes({0x10000u, 0x10000u, 0x10000u, 0x10000u}, {})); }, {"more than"});
  // A zero dimension makes the product zero whatever else the header says.
  EXPECT_TRUE(parse(idx_bytes({0xffffffffu, 0, 0xffffffffu}, {})).values.empty());
}

TEST(Gzip, InflatesAndPassesPlainBytesThrough) {
  const std::vector<uint8_t> raw = idx_bytes({4, 2}, {9, 8, 7, 6, 5, 4, 3, 2});
  EXPECT_EQ(ddp::data::gunzip_if_gzip(gzip(raw), "x.gz", 1 << 20), raw);
  EXPECT_EQ(ddp::data::gunzip_if_gzip(raw, "x", 1 << 20), raw);
}

TEST(Gzip, CorruptTruncatedTrailingAndOversizedStreamsAreDataErrors) {
  std::vector<uint8_t> raw(100000);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  const std::vector<uint8_t> gz = gzip(raw);
  std::vector<uint8_t> truncated(gz.begin(), gz.begin() + gz.size() / 2);
  expect_data_error([&] { ddp::data::gunzip_if_gzip(truncated, "t.gz", 1 << 20); }, {"t.gz", "truncated"});
  std::vector<uint8_t> trailing = gz;
  trailing.push_back(0);
  expect_data_error([&] { ddp::data::gunzip_if_gzip(trailing, "t.gz", 1 << 20); }, {"t.gz", "1 bytes after the end"});
  std::vector<uint8_t> corrupt = gz;
  corrupt[12] ^= 0xff;
  corrupt[13] ^= 0xff;
  expect_data_error([&] { ddp::data::gunzip_if_gzip(corrupt, "t.gz", 1 << 20); }, {"t.gz"});
  // A bomb: 64 MiB of zeros is ~64 KiB compressed; the cap stops it at 1 MiB, not after inflating all.
  const std::vector<uint8_t> bomb = gzip(std::vector<uint8_t>(64u << 20, 0));
  ASSERT_LT(bomb.size(), 1u << 20);
  expect_data_error([&] { ddp::data::gunzip_if_gzip(bomb, "b.gz", 1 << 20); }, {"b.gz", "more than 1048576 bytes"});
}

TEST(CifarFromIdx, CentresGreyImagesOnABlack32x32CanvasInAllThreeChannels) {
  const IdxArray imgs = images(3, 28, 28);
  const IdxArray labels = parse(idx_bytes({3}, {9, 0, 4}));
  const ddp::data::cifar::CifarRecords s = ddp::data::cifar::cifar_split_from_idx(imgs, labels, 0, "t");
  ASSERT_EQ(s.count, 3);
  EXPECT_EQ(s.labels, (std::vector<uint8_t>{9, 0, 4}));
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) {
          const uint8_t got = s.pixels[i * 3072 + c * 1024 + y * 32 + x];
          const bool inside = y >= 2 && y < 30 && x >= 2 && x < 30;
          const uint8_t want = inside ? imgs.values[i * 784 + (y - 2) * 28 + (x - 2)] : 0;
          ASSERT_EQ(got, want) << "image " << i << " channel " << c << " y " << y << " x " << x;
        }
  EXPECT_EQ(ddp::data::cifar::cifar_split_from_idx(imgs, labels, 2, "t").count, 2);  // --train/--test limits
}

TEST(CifarFromIdx, ShapesAndLabelsThatDoNotFitAreDataErrors) {
  const IdxArray labels3 = parse(idx_bytes({3}, {1, 2, 3}));
  expect_data_error([&] { ddp::data::cifar::cifar_split_from_idx(images(3, 33, 28), labels3, 0, "train"); }, {"train", "33x28"});
  expect_data_error([&] { ddp::data::cifar::cifar_split_from_idx(parse(idx_bytes({3, 4}, std::vector<uint8_t>(12))), labels3, 0, "train"); },
                    {"2 dimensions"});
  expect_data_error([&] { ddp::data::cifar::cifar_split_from_idx(images(2, 28, 28), labels3, 0, "train"); }, {"3 labels", "2 images"});
  expect_data_error([&] { ddp::data::cifar::cifar_split_from_idx(images(3, 28, 28), parse(idx_bytes({3}, {1, 10, 3})), 0, "train"); },
                    {"label 10 of image 1"});
}

// The whole path: gzip'd IDX files -> reader -> converter -> both layouts -> the CIFAR-10 loader.
TEST(CifarFromIdx, WrittenLayoutsLoadBackAsTheSameImages) {
  TempDir dir("idx-import");
  const IdxArray train_imgs = images(15, 28, 28), test_imgs = images(4, 28, 28);
  std::vector<uint8_t> train_labels, test_labels;
  for (int i = 0; i < 15; ++i) train_labels.push_back(static_cast<uint8_t>(i % 10));
  for (int i = 0; i < 4; ++i) test_labels.push_back(static_cast<uint8_t>(9 - i));
  cifar_test::write_bytes(dir.path + "/train-images.gz", gzip(idx_bytes(train_imgs.dims, train_imgs.values)));
  cifar_test::write_bytes(dir.path + "/train-labels", idx_bytes({15}, train_labels));
  const auto train = ddp::data::cifar::cifar_split_from_idx(ddp::data::read_idx_file(dir.path + "/train-images.gz"),
                                                     ddp::data::read_idx_file(dir.path + "/train-labels"), 0, "train");
  const auto test = ddp::data::cifar::cifar_split_from_idx(test_imgs, parse(idx_bytes({4}, test_labels)), 0, "test");
  ddp::data::cifar::CifarLayoutFiles files;
  files.out_dir = dir.path + "/out";
  files.train = &train;
  files.test = &test;
  files.class_names = ddp::data::cifar::fashion_mnist_class_names();
  ddp::data::cifar::write_cifar10_layout(files);
  for (const char* layout : {"/cifar-10-batches-bin", "/cifar-10-batches-py"}) {
    SCOPED_TRACE(layout);
    auto d = ddp::data::cifar::load_cifar10(files.out_dir + layout);
    ASSERT_EQ(d.train.size(), 15);  // 3 per file
    ASSERT_EQ(d.test.size(), 4);
    EXPECT_EQ(std::memcmp(d.train.images.data_ptr<uint8_t>(), train.pixels.data(), train.pixels.size()), 0);
    EXPECT_EQ(std::memcmp(d.test.images.data_ptr<uint8_t>(), test.pixels.data(), test.pixels.size()), 0);
    for (int i = 0; i < 15; ++i) EXPECT_EQ(d.train.labels[i].item<int64_t>(), i % 10);
  }
  const auto fourteen = ddp::data::cifar::cifar_split_from_idx(train_imgs, parse(idx_bytes({15}, train_labels)), 14, "train");
  files.train = &fourteen;
  EXPECT_THROW(ddp::data::cifar::write_cifar10_layout(files), ddp::ConfigError);  // 14 is not a multiple of 5
}

// Augmentation and normalisation against a reference built from plain tensor ops the way
// torchvision does it: pad with 0, crop 32x32 at (4 + dy, 4 + dx), flip, /255, (x - mean) / std.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>

#include "cifar_test_util.h"
#include "data/cifar/cifar_transforms.h"

using ddp::data::cifar::CifarAugment;
using ddp::data::cifar::CifarSplit;

namespace {

CifarSplit random_split(int64_t n) {
  at::manual_seed(3);
  CifarSplit s;
  s.images = at::randint(0, 256, {n, 3, 32, 32}, at::kByte);
  s.labels = at::randint(0, 10, {n}, at::kLong);
  return s;
}

at::Tensor reference(const CifarSplit& s, int64_t k, const ddp::data::cifar::SampleAugmentation& a) {
  at::Tensor img = s.images[k].to(at::kFloat);
  at::Tensor padded = at::constant_pad_nd(img, {4, 4, 4, 4}, 0);
  at::Tensor crop = padded.slice(1, 4 + a.dy, 36 + a.dy).slice(2, 4 + a.dx, 36 + a.dx);
  if (a.flip) crop = crop.flip({2});
  at::Tensor mean = at::tensor({0.4914f, 0.4822f, 0.4465f}).view({3, 1, 1});
  at::Tensor std = at::tensor({0.2023f, 0.1994f, 0.2010f}).view({3, 1, 1});
  return (crop / 255.0f - mean) / std;
}

}  // namespace

TEST(CifarTransforms, MatchesPadCropFlipNormaliseReference) {
  CifarSplit s = random_split(300);
  std::vector<int64_t> idx(300);
  for (int64_t i = 0; i < 300; ++i) idx[i] = 299 - i;
  CifarAugment aug = CifarAugment().seed(11);
  at::Tensor images = at::empty({300, 3, 32, 32}, at::kFloat), labels = at::empty({300}, at::kLong);
  assemble_cifar_batch(s, idx.data(), 300, aug, /*epoch=*/2, images, labels);
  std::set<int> dys, dxs;
  int flips = 0;
  for (int64_t i = 0; i < 300; ++i) {
    auto a = ddp::data::cifar::sample_augmentation(aug, 2, idx[i]);
    dys.insert(a.dy);
    dxs.insert(a.dx);
    flips += a.flip;
    ASSERT_TRUE(at::allclose(images[i], reference(s, idx[i], a), 0, 1e-6)) << "sample " << i;
    ASSERT_EQ(labels[i].item<int64_t>(), s.labels[idx[i]].item<int64_t>());
  }
  EXPECT_EQ(dys.size(), 9u);  // every offset in -4..4 occurs
  EXPECT_EQ(dxs.size(), 9u);
  EXPECT_EQ(*dys.begin(), -4);
  EXPECT_EQ(*dxs.rbegin(), 4);
  EXPECT_GT(flips, 100);
  EXPECT_LT(flips, 200);
}

TEST(CifarTransforms, TestSetIsOnlyNormalised) {
  CifarSplit s = random_split(20);
  std::vector<int64_t> idx = {4, 0, 19};
  at::Tensor images = at::empty({3, 3, 32, 32}, at::kFloat), labels = at::empty({3}, at::kLong);
  assemble_cifar_batch(s, idx.data(), 3, CifarAugment().enabled(false), 0, images, labels);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::allclose(images[i], reference(s, idx[i], {}), 0, 1e-6));
}

TEST(CifarTransforms, AugmentationDependsOnSampleEpochAndSeedOnly) {
  CifarAugment aug = CifarAugment().seed(5);
  int same_across_epochs = 0;
  for (int64_t k = 0; k < 200; ++k) {
    auto a = ddp::data::cifar::sample_augmentation(aug, 1, k), b = ddp::data::cifar::sample_augmentation(aug, 1, k);
    EXPECT_TRUE(a.dx == b.dx && a.dy == b.dy && a.flip == b.flip);
    auto c = ddp::data::cifar::sample_augmentation(aug, 2, k);
    same_across_epochs += a.dx == c.dx && a.dy == c.dy && a.flip == c.flip;
  }
  EXPECT_LT(same_across_epochs, 20);  // ~1/162 expected
  CifarSplit s = random_split(5);
  std::vector<int64_t> bad = {5};
  at::Tensor images = at::empty({1, 3, 32, 32}, at::kFloat), labels = at::empty({1}, at::kLong);
  EXPECT_THROW(assemble_cifar_batch(s, bad.data(), 1, aug, 0, images, labels), std::out_of_range);
}

#include "data/cifar/cifar_transforms.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "data/common/counter_rng.h"

namespace ddp::data::cifar {

const float kCifarMean[3] = {0.4914f, 0.4822f, 0.4465f};
const float kCifarStd[3] = {0.2023f, 0.1994f, 0.2010f};

namespace {

// value -> (value / 255 - mean) / std, computed in float as ToTensor + Normalize do.
struct NormaliseTable {
  float lut[3][256];
  float pad[3];  // the padding pixel (0) after normalisation
  NormaliseTable() {
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) lut[c][v] = (static_cast<float>(v) / 255.0f - kCifarMean[c]) / kCifarStd[c];
      pad[c] = lut[c][0];
    }
  }
};
const NormaliseTable& table() {
  static const NormaliseTable t;
  return t;
}

// out[y][x] = src[y + dy][(flip ? 31 - x : x) + dx], or the padding value outside the image.
void write_sample(const uint8_t* src, float* out, const SampleAugmentation& a) {
  const NormaliseTable& t = table();
  // Columns whose source lies inside the image.
  const int x0 = a.flip ? std::max(0, a.dx) : std::max(0, -a.dx);
  const int x1 = a.flip ? std::min(32, 32 + a.dx) : std::min(32, 32 - a.dx);
  for (int c = 0; c < 3; ++c) {
    const float* lut = t.lut[c];
    const float pad = t.pad[c];
    const uint8_t* plane = src + c * 1024;
    for (int y = 0; y < 32; ++y) {
      float* row = out + c * 1024 + y * 32;
      const int sy = y + a.dy;
      if (sy < 0 || sy >= 32) {
        std::fill(row, row + 32, pad);
        continue;
      }
      const uint8_t* srow = plane + sy * 32;
      for (int x = 0; x < x0; ++x) row[x] = pad;
      if (a.flip) {
        const uint8_t* s = srow + 31 + a.dx;  // source of column x is s - x
        for (int x = x0; x < x1; ++x) row[x] = lut[s[-x]];
      } else {
        const uint8_t* s = srow + a.dx;
        for (int x = x0; x < x1; ++x) row[x] = lut[s[x]];
      }
      for (int x = x1; x < 32; ++x) row[x] = pad;
    }
  }
}

}  // namespace

SampleAugmentation sample_augmentation(const CifarAugment& aug, int64_t epoch, int64_t dataset_index) {
  SampleAugmentation a;
  if (!aug.enabled()) return a;
  CounterRng rng(aug.seed(), static_cast<uint64_t>(epoch), static_cast<uint64_t>(dataset_index));
  const int p = aug.padding();
  if (p > 0) {
    // torchvision draws the top offset, then the left one, each uniform in [0, 2p].
    a.dy = static_cast<int>(rng.uniform_int(2 * p + 1)) - p;
    a.dx = static_cast<int>(rng.uniform_int(2 * p + 1)) - p;
  }
  if (aug.flip()) a.flip = rng.bernoulli();
  return a;
}

void assemble_cifar_batch(const CifarSplit& split, const int64_t* indices, int64_t n, const CifarAugment& aug,
                          int64_t epoch, at::Tensor& images, at::Tensor& labels) {
  if (aug.padding() < 0 || aug.padding() > 32) throw std::invalid_argument("CifarAugment: padding must be in 0..32");
  const uint8_t* src = split.images.data_ptr<uint8_t>();
  const int64_t* src_labels = split.labels.data_ptr<int64_t>();
  float* out = images.data_ptr<float>();
  int64_t* out_labels = labels.data_ptr<int64_t>();
  const int64_t size = split.size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = indices[i];
    if (k < 0 || k >= size)
      throw std::out_of_range("CIFAR-10 sample index " + std::to_string(k) + " outside 0.." + std::to_string(size - 1));
    write_sample(src + k * 3072, out + i * 3072, sample_augmentation(aug, epoch, k));
    out_labels[i] = src_labels[k];
  }
}

}  // namespace ddp::data::cifar

#include "data/cifar/cifar_from_idx.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cstring>

#include "data/cifar/cifar_files.h"

namespace ddp::data::cifar {

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

CifarRecords cifar_split_from_idx(const IdxArray& images, const IdxArray& labels, int64_t limit, const std::string& what) {
  constexpr uint32_t kSide = 32;
  if (images.dims.size() != 3)
    throw DataError(what + " images: " + std::to_string(images.dims.size()) + " dimensions, expected 3 ([n][rows][cols])");
  const uint32_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (rows < 1 || rows > kSide || cols < 1 || cols > kSide)
    throw DataError(what + " images: " + std::to_string(rows) + "x" + std::to_string(cols) +
                    " does not fit a 32x32 CIFAR-10 image");
  if (labels.dims.size() != 1 || labels.dims[0] != n)
    throw DataError(what + " labels: " + std::to_string(labels.dims.empty() ? 0 : labels.dims[0]) + " labels in " +
                    std::to_string(labels.dims.size()) + " dimensions for " + std::to_string(n) + " images");
  if (n == 0) throw DataError(what + ": no images");
  if (limit < 0) throw ConfigError(what + ": a negative image limit");
  const int64_t count = limit > 0 ? std::min<int64_t>(limit, n) : n;

  CifarRecords out;
  out.count = count;
  out.pixels.assign(static_cast<size_t>(count) * kCifarImageBytes, 0);
  out.labels.resize(static_cast<size_t>(count));
  const uint32_t top = (kSide - rows) / 2, left = (kSide - cols) / 2;
  const size_t image_bytes = size_t{rows} * cols;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t label = labels.values[static_cast<size_t>(i)];
    if (label >= kCifarClasses)
      throw DataError(what + " labels: label " + std::to_string(label) + " of image " + std::to_string(i) +
                      " does not fit CIFAR-10's 10 classes");
    out.labels[static_cast<size_t>(i)] = label;
    const uint8_t* src = images.values.data() + static_cast<size_t>(i) * image_bytes;
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(i) * kCifarImageBytes;
    for (int c = 0; c < 3; ++c)
      for (uint32_t y = 0; y < rows; ++y)
        std::memcpy(dst + c * kSide * kSide + (top + y) * kSide + left, src + size_t{y} * cols, cols);
  }
  return out;
}

}  // namespace ddp::data::cifar

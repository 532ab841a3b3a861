#pragma once
// One X-ray from file to network input: grayscale decode at reduced resolution when the target size
// allows (libjpeg's DCT scaling: 1/2, 1/4, 1/8 of the pixels decoded), area resize to size x size,
// then (training) one affine warp for random resized crop + small rotation, brightness/contrast
// jitter and normalisation, written straight into the batch tensor's memory.
//
//   cv::Mat img = ddp::data::ranzcr::decode_resized("train/1.2.3.jpg", 224);   // CV_8UC1 224x224
//   ddp::data::ranzcr::Rng rng = ddp::data::ranzcr::Rng::for_stream(seed, epoch, index);
//   ddp::data::ranzcr::to_input(img, out_ptr, &augment, &rng);                 // 224*224 floats

#include "data/ranzcr/random.h"

#include <torch/arg.h>
#include <opencv2/core/mat.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data::ranzcr {

/// Mean and standard deviation for normalisation: ImageNet's RGB statistics averaged over the
/// channels, so a grayscale stem converted from torchvision weights sees familiar inputs.
constexpr float kPixelMean = 0.449f;
constexpr float kPixelStd = 0.226f;

struct AugmentOptions {
  /// Random resized crop: area fraction in [crop_scale_min, 1], aspect ratio in [1/r, r].
  TORCH_ARG(double, crop_scale_min) = 0.85;
  TORCH_ARG(double, crop_ratio_max) = 1.1;
  /// Rotation in degrees, uniform in [-rotate_degrees, rotate_degrees].
  TORCH_ARG(double, rotate_degrees) = 7.0;
  /// out = in * (1 + c) + b with c in [-contrast, contrast], b in [-brightness, brightness].
  TORCH_ARG(double, brightness) = 0.1;
  TORCH_ARG(double, contrast) = 0.1;
};

/// Width and height from a JPEG's SOF marker (read_jpeg_header); false when `data` is not a JPEG we
/// can parse.
bool jpeg_dimensions(const uint8_t* data, size_t size, int* width, int* height);

/// The largest of 1, 2, 4, 8 that still decodes at least `target` pixels along the shorter side.
int decode_reduction(int width, int height, int target);

/// Decodes encoded image bytes to grayscale size x size (CV_8UC1). `what` names the image in errors.
/// DataError when the bytes do not decode, or a JPEG is truncated or claims more than
/// kMaxImagePixels (check_jpeg).
cv::Mat decode_resized(const std::vector<uint8_t>& bytes, int size, const std::string& what);

/// Reads and decodes a file. DataError naming the file when missing, unreadable or undecodable.
cv::Mat decode_resized(const std::string& path, int size);

/// Writes `image` (CV_8UC1, size x size) as size*size floats to `out`, normalised with
/// kPixelMean/kPixelStd; with `augment` (and `rng`) the training augmentation is applied first.
void to_input(const cv::Mat& image, float* out, const AugmentOptions* augment = nullptr, Rng* rng = nullptr);

}  // namespace ddp::data::ranzcr

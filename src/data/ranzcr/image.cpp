#include "data/ranzcr/image.h"

#include "data/ranzcr/jpeg_header.h"
#include "util/files.h"

#include <ddp/errors.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace ddp::data::ranzcr {

bool jpeg_dimensions(const uint8_t* data, size_t size, int* width, int* height) {
  const JpegInfo info = read_jpeg_header(data, size);
  if (info.width <= 0 || info.height <= 0) return false;
  *width = info.width;
  *height = info.height;
  return true;
}

int decode_reduction(int width, int height, int target) {
  const int shorter = std::min(width, height);
  for (int f : {8, 4, 2}) {
    if ((shorter + f - 1) / f >= target) return f;
  }
  return 1;
}

cv::Mat decode_resized(const std::vector<uint8_t>& bytes, int size, const std::string& what) {
  if (bytes.empty()) throw ddp::DataError("image " + what + " is empty");
  int flag = cv::IMREAD_GRAYSCALE;
  const JpegInfo info = read_jpeg_header(bytes.data(), bytes.size());
  check_jpeg(info, what);
  if (info.width > 0 && info.height > 0) {
    switch (decode_reduction(info.width, info.height, size)) {
      case 8: flag = cv::IMREAD_REDUCED_GRAYSCALE_8; break;
      case 4: flag = cv::IMREAD_REDUCED_GRAYSCALE_4; break;
      case 2: flag = cv::IMREAD_REDUCED_GRAYSCALE_2; break;
      default: break;
    }
  }
  cv::Mat decoded;
  try {
    // imdecode wraps the buffer without copying it.
    decoded = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data())),
                           flag);
  } catch (const cv::Exception& e) {
    throw ddp::DataError("image " + what + " cannot be decoded: " + e.what());
  }
  if (decoded.empty()) throw ddp::DataError("image " + what + " cannot be decoded (corrupt or not an image)");
  if (decoded.depth() != CV_8U) decoded.convertTo(decoded, CV_8U, decoded.depth() == CV_16U ? 1.0 / 257 : 1.0);
  if (decoded.rows == size && decoded.cols == size) return decoded;
  cv::Mat resized;
  const bool shrinking = decoded.rows >= size && decoded.cols >= size;
  cv::resize(decoded, resized, cv::Size(size, size), 0, 0, shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
  return resized;
}

cv::Mat decode_resized(const std::string& path, int size) {
  return decode_resized(util::read_file_bytes(path), size, "'" + path + "'");
}

void to_input(const cv::Mat& image, float* out, const AugmentOptions* augment, Rng* rng) {
  CV_Assert(image.type() == CV_8UC1 && image.isContinuous());
  const int size = image.cols;
  cv::Mat source = image;
  float scale = 1.f, shift = 0.f;
  if (augment && rng) {
    const double area = rng->uniform(augment->crop_scale_min(), 1.0);
    const double log_ratio = std::log(augment->crop_ratio_max());
    const double ratio = std::exp(rng->uniform(-log_ratio, log_ratio));
    const double crop_w = std::min(1.0, std::sqrt(area * ratio)) * size;
    const double crop_h = std::min(1.0, std::sqrt(area / ratio)) * size;
    const double cx = rng->uniform(crop_w / 2, size - crop_w / 2 + 1e-9);
    const double cy = rng->uniform(crop_h / 2, size - crop_h / 2 + 1e-9);
    const double angle = rng->uniform(-augment->rotate_degrees(), augment->rotate_degrees()) * CV_PI / 180.0;
    // Output pixel p maps to source C + R(angle) * diag(crop_w, crop_h) / size * (p - size/2).
    const double a = std::cos(angle), b = std::sin(angle);
    const double sx = crop_w / size, sy = crop_h / size;
    cv::Matx23d m(a * sx, -b * sy, 0.0, b * sx, a * sy, 0.0);
    const double half = size / 2.0;
    m(0, 2) = cx - (m(0, 0) * half + m(0, 1) * half);
    m(1, 2) = cy - (m(1, 0) * half + m(1, 1) * half);
    cv::Mat warped;
    cv::warpAffine(image, warped, m, image.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                   cv::BORDER_REFLECT_101);
    source = warped;
    scale = 1.f + static_cast<float>(rng->uniform(-augment->contrast(), augment->contrast()));
    shift = static_cast<float>(rng->uniform(-augment->brightness(), augment->brightness()));
  }
  // Brightness, contrast and normalisation in one table lookup per pixel.
  float lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = ((v / 255.f) * scale + shift - kPixelMean) / kPixelStd;
  const uint8_t* px = source.ptr<uint8_t>(0);
  const size_t n = static_cast<size_t>(size) * size;
  for (size_t i = 0; i < n; ++i) out[i] = lut[px[i]];
}

}  // namespace ddp::data::ranzcr

#pragma once
// The JPEG marker walk ddp does itself, before OpenCV decodes: the frame size (to pick libjpeg's
// DCT scaling) and the checks a decoder does not make loudly. No OpenCV here (fuzzed on its own).
//
//   JpegInfo info = ddp::data::ranzcr::read_jpeg_header(bytes.data(), bytes.size());
//   ddp::data::ranzcr::check_jpeg(info, "'train/1.2.3.jpg'");   // DataError: truncated, too large
//
// Every length comes from the file and is checked against the bytes that are there before use.

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddp::data::ranzcr {

/// Most pixels an image's header may claim (16384 x 16384; RANZCR's X-rays are about 3000 x 3000):
/// a larger one is refused before a decoder allocates for it.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

struct JpegInfo {
  bool is_jpeg = false;    ///< starts with the SOI marker (FF D8)
  int width = 0;           ///< from the first SOF marker; 0 when none was reached
  int height = 0;
  size_t scan_offset = 0;  ///< offset of the first SOS marker; 0 when none was reached
  bool has_end = false;    ///< an EOI marker (FF D9) follows the first scan
};

/// Walks the markers from SOI to the first scan, then looks for EOI after it. Never throws, never
/// reads outside [data, data + size).
JpegInfo read_jpeg_header(const uint8_t* data, size_t size);

/// DataError naming `what` when a JPEG claims more than kMaxImagePixels, or was cut off (its scan
/// has no end-of-image marker: libjpeg would fill the rest with grey and only warn). Nothing for
/// bytes that are not a JPEG (the decoder judges those).
void check_jpeg(const JpegInfo& info, const std::string& what);

}  // namespace ddp::data::ranzcr

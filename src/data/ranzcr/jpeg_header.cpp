// JPEG markers (ITU T.81, B.1): FF xx; all but SOI, EOI, RSTn and TEM carry a big-endian 16-bit
// length that counts itself. Inside entropy-coded data an FF byte is followed by 00 (stuffing) or
// a RSTn, so FF D9 there is the real end of the image.
#include "data/ranzcr/jpeg_header.h"

#include <ddp/errors.h>

namespace ddp::data::ranzcr {

JpegInfo read_jpeg_header(const uint8_t* data, size_t size) {
  JpegInfo info;
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return info;
  info.is_jpeg = true;
  size_t i = 2;
  while (i + 1 < size) {
    if (data[i] != 0xFF) return info;  // not a marker where one must be: leave it to the decoder
    const uint8_t marker = data[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // no payload
      i += 2;
      continue;
    }
    if (marker == 0xD9) return info;  // end of image before any scan
    if (i + 3 >= size) return info;
    const size_t length = (static_cast<size_t>(data[i + 2]) << 8) | data[i + 3];
    if (length < 2 || length > size - i - 2) return info;  // the segment runs past the file
    if (marker == 0xDA) {
      info.scan_offset = i;
      for (size_t j = i + 2 + length; j + 1 < size; ++j) {
        if (data[j] == 0xFF && data[j + 1] == 0xD9) {
          info.has_end = true;
          break;
        }
      }
      return info;
    }
    const bool is_sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof && info.width == 0 && length >= 7) {  // length, precision, height, width
      info.height = (data[i + 5] << 8) | data[i + 6];
      info.width = (data[i + 7] << 8) | data[i + 8];
    }
    i += 2 + length;
  }
  return info;
}

void check_jpeg(const JpegInfo& info, const std::string& what) {
  if (!info.is_jpeg) return;
  if (static_cast<int64_t>(info.width) * info.height > kMaxImagePixels) {
    throw DataError("image " + what + " claims " + std::to_string(info.width) + " x " + std::to_string(info.height) +
                    " pixels in its JPEG header (more than " + std::to_string(kMaxImagePixels) + ")");
  }
  if (info.scan_offset != 0 && !info.has_end) {
    throw DataError("image " + what + " is truncated: its JPEG scan data has no end-of-image marker (FF D9)");
  }
}

}  // namespace ddp::data::ranzcr

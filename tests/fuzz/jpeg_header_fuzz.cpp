// Fuzz target: the bytes of an image file through ddp's own JPEG marker walk (read_jpeg_header,
// check_jpeg), which runs before OpenCV decodes. It must never read outside the buffer; a refused
// image is a ddp::DataError; anything else is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>

#include "data/ranzcr/jpeg_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ddp::data::ranzcr::JpegInfo info = ddp::data::ranzcr::read_jpeg_header(data, size);
  if (info.width < 0 || info.height < 0 || info.scan_offset >= size + (info.scan_offset == 0)) __builtin_trap();
  try {
    ddp::data::ranzcr::check_jpeg(info, "fuzz.jpg");
  } catch (const ddp::DataError&) {
  }
  return 0;
}

#include "data/common/gzip.h"

#include <ddp/errors.h>

#include <zlib.h>

#include <algorithm>

namespace ddp::data {

bool is_gzip(const uint8_t* bytes, size_t size) { return size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

std::vector<uint8_t> gunzip_if_gzip(std::vector<uint8_t> bytes, const std::string& what, size_t max_output) {
  if (!is_gzip(bytes.data(), bytes.size())) return bytes;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw DataError(what + ": cannot start gzip decompression");
  // Owns z's state on every path out, the throwing ones included.
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};

  std::vector<uint8_t> out;
  // Four times the input is a good first guess for image data; grown geometrically, never past the cap.
  out.resize(std::min(max_output, std::max<size_t>(bytes.size() * 4, 1 << 16)));
  z.next_in = bytes.data();
  size_t in_left = bytes.size();
  size_t produced = 0;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= max_output)
        throw DataError(what + ": inflates to more than " + std::to_string(max_output) + " bytes (the limit for this file)");
      out.resize(std::min(max_output, out.size() * 2));
    }
    // zlib counts in uInt; feed and drain at most 1 GiB per call.
    const uInt in_chunk = static_cast<uInt>(std::min<size_t>(in_left, 1u << 30));
    const uInt out_chunk = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    z.avail_in = in_chunk;
    z.next_out = out.data() + produced;
    z.avail_out = out_chunk;
    const int rc = inflate(&z, Z_NO_FLUSH);
    in_left -= in_chunk - z.avail_in;
    produced += out_chunk - z.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && in_left == 0 && z.avail_in == 0)
      throw DataError(what + ": gzip stream is truncated (" + std::to_string(bytes.size()) + " bytes read)");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw DataError(what + ": corrupt gzip data (" + std::string(z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")");
  }
  if (in_left != 0)
    throw DataError(what + ": " + std::to_string(in_left) + " bytes after the end of the gzip stream");
  out.resize(produced);
  return out;
}

}  // namespace ddp::data

#include "data/idx/idx_file.h"

#include <ddp/errors.h>

#include "data/common/gzip.h"
#include "util/files.h"

namespace ddp::data {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxDims = 4;
constexpr size_t kMaxFileBytes = size_t{1} << 30;

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Checks the header against `size` and returns the dimensions; `*header` gets the header's length.
std::vector<uint32_t> parse_header(const uint8_t* bytes, size_t size, const std::string& what, size_t* header_bytes) {
  if (size < 4) throw DataError(what + ": " + std::to_string(size) + " bytes is too short for an IDX header");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw DataError(what + ": not an IDX file (the first two bytes must be zero)");
  if (bytes[2] != kUnsignedByte)
    throw DataError(what + ": IDX element type " + std::to_string(bytes[2]) +
                    " is not supported (only unsigned bytes, type 8)");
  const int ndims = bytes[3];
  if (ndims < 1 || ndims > kMaxDims)
    throw DataError(what + ": IDX header says " + std::to_string(ndims) + " dimensions (expected 1.." +
                    std::to_string(kMaxDims) + ")");
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (size < header)
    throw DataError(what + ": " + std::to_string(size) + " bytes is too short for an IDX header of " +
                    std::to_string(ndims) + " dimensions");
  std::vector<uint32_t> dims;
  for (int d = 0; d < ndims; ++d) dims.push_back(big_endian_u32(bytes + 4 + 4 * d));
  // The product of four 32-bit numbers can pass 2^64: saturate instead of wrapping, so a forged
  // header can never come out equal to the real length.
  uint64_t count = 1;
  for (uint32_t n : dims)
    if (__builtin_mul_overflow(count, uint64_t{n}, &count)) count = UINT64_MAX;
  if (count != size - header)
    throw DataError(what + ": IDX header promises " + (count > size ? std::string("more than ") + std::to_string(size)
                                                                    : std::to_string(count)) +
                    " elements but the file holds " + std::to_string(size - header) + " bytes after the header");
  *header_bytes = header;
  return dims;
}

}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& what) {
  size_t header = 0;
  IdxArray out;
  out.dims = parse_header(bytes, size, what, &header);
  out.values.assign(bytes + header, bytes + size);
  return out;
}

IdxArray read_idx_file(const std::string& path) {
  std::vector<uint8_t> raw = gunzip_if_gzip(util::read_file_bytes(path), path, kMaxFileBytes);
  size_t header = 0;
  IdxArray out;
  out.dims = parse_header(raw.data(), raw.size(), path, &header);
  raw.erase(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(header));  // no second 47 MB buffer
  out.values = std::move(raw);
  return out;
}

}  // namespace ddp::data

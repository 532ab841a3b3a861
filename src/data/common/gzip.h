#pragma once
// Gzip decompression for dataset files shipped compressed (Debian's dataset-fashion-mnist ships
// *-idx?-ubyte.gz). Bytes that do not start with the gzip magic come back unchanged, so a reader
// accepts a file whether or not the user unpacked it.
//
//   std::vector<uint8_t> raw = ddp::data::gunzip_if_gzip(util::read_file_bytes(path), path, 1 << 30);

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data {

/// True when `bytes` begins with the gzip magic 1f 8b.
bool is_gzip(const uint8_t* bytes, size_t size);

/// Inflates one gzip member. DataError naming `what` when the stream is corrupt or truncated, has
/// bytes after its end, or would inflate past `max_output` bytes (checked while inflating, so a
/// small bomb never allocates more than the cap).
std::vector<uint8_t> gunzip_if_gzip(std::vector<uint8_t> bytes, const std::string& what, size_t max_output);

}  // namespace ddp::data

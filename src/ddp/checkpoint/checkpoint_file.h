#pragma once
// The on-disk envelope of a checkpoint (written atomically by util::write_file_atomically).
//
// Layout (little-endian): a 32-byte header, then the payload (a LibTorch archive).
//   0  "DDPCKPT1"          magic
//   8  u32 version (1)
//  12  u32 reserved (0)
//  16  u64 payload size
//  24  u32 CRC32C of the payload
//  28  u32 CRC32C of bytes 0..27
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ddp::detail {

constexpr size_t kCheckpointHeaderSize = 32;

/// The header for `payload`.
std::string make_checkpoint_header(std::string_view payload);

/// Checks header, size and checksum of a whole file's bytes; returns the payload. DataError
/// "<path>: <what is wrong>" (truncated, bad magic, checksum mismatch, ...).
std::string_view verified_payload(const std::string& path, std::string_view file_bytes);

}  // namespace ddp::detail

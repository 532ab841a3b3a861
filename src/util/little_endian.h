#pragma once
// Fixed-width little-endian integers in byte strings: the layout of ddp's own files (the checkpoint
// header, the RNG-state blob) and of TFRecord framing. Byte by byte, so neither the host's byte
// order nor alignment matters.
//
//   std::string h;  ddp::util::append_le(h, payload.size(), 8);
//   uint64_t size = ddp::util::read_le(h, 0, 8);   // the caller has checked h holds 8 bytes at 0
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ddp::util {

/// Appends the low `bytes` bytes of `v` (1..8), least significant first.
inline void append_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

/// The `bytes`-byte (1..8) little-endian integer at `at`. No bounds check: parsers check the length
/// first, where they can say what was short.
inline uint64_t read_le(std::string_view data, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(data[at + i])) << (8 * i);
  return v;
}

}  // namespace ddp::util

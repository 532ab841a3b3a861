#pragma once
// CRC32C (Castagnoli), the checksum of checkpoint payloads. Software, slice-by-8 (~1-2 GB/s), so
// the result does not depend on the CPU.
#include <cstddef>
#include <cstdint>

namespace ddp::detail {

/// CRC32C of `size` bytes, continuing from `crc` (0 for a fresh computation).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace ddp::detail

#pragma once
// CRC32C (Castagnoli), the checksum of checkpoint payloads and of TensorBoard event records (one
// implementation for both). Software, slice-by-8 (~1-2 GB/s), so the result does not depend on the CPU.
#include <cstddef>
#include <cstdint>

namespace ddp::util {

/// CRC32C of `size` bytes, continuing from `crc` (0 for a fresh computation).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace ddp::util

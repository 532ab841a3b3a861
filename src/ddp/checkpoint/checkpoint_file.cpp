#include "ddp/checkpoint/checkpoint_file.h"

#include <ddp/errors.h>

#include <cstdio>
#include <cstring>

#include "util/crc32c.h"
#include "util/little_endian.h"

namespace ddp::detail {

using util::crc32c;

namespace {

constexpr char kCheckpointMagic[8] = {'D', 'D', 'P', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;

uint32_t get_u32(std::string_view b, size_t at) { return static_cast<uint32_t>(util::read_le(b, at, 4)); }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

std::string make_checkpoint_header(std::string_view payload) {
  std::string h(kCheckpointMagic, sizeof kCheckpointMagic);
  util::append_le(h, kVersion, 4);
  util::append_le(h, 0, 4);
  util::append_le(h, payload.size(), 8);
  util::append_le(h, crc32c(payload.data(), payload.size()), 4);
  util::append_le(h, crc32c(h.data(), h.size()), 4);
  return h;
}

std::string_view verified_payload(const std::string& path, std::string_view bytes) {
  auto fail = [&](const std::string& what) { return DataError("checkpoint " + path + ": " + what); };
  if (bytes.size() < kCheckpointHeaderSize)
    throw fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
               std::to_string(kCheckpointHeaderSize) + "-byte header");
  if (std::memcmp(bytes.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0)
    throw fail("not a ddp checkpoint (bad magic bytes)");
  uint32_t stored_header_crc = get_u32(bytes, 28);
  uint32_t header_crc = crc32c(bytes.data(), 28);
  if (stored_header_crc != header_crc)
    throw fail("header checksum mismatch (stored " + hex32(stored_header_crc) + ", computed " +
               hex32(header_crc) + ")");
  uint32_t version = get_u32(bytes, 8);
  if (version != kVersion)
    throw fail("unsupported format version " + std::to_string(version) + " (this build reads " +
               std::to_string(kVersion) + ")");
  // Zero in every file this version writes; anything else is a writer this build does not know.
  uint32_t reserved = get_u32(bytes, 12);
  if (reserved != 0)
    throw fail("reserved header field is " + hex32(reserved) + ", not 0 (written by a newer or foreign writer)");
  uint64_t payload_size = util::read_le(bytes, 16, 8);
  uint64_t present = bytes.size() - kCheckpointHeaderSize;
  if (present < payload_size)
    throw fail("truncated: header says " + std::to_string(payload_size) + " payload bytes, file has " +
               std::to_string(present));
  if (present > payload_size)
    throw fail(std::to_string(present - payload_size) + " unexpected bytes after the payload");
  std::string_view payload = bytes.substr(kCheckpointHeaderSize);
  uint32_t stored = get_u32(bytes, 24);
  uint32_t computed = crc32c(payload.data(), payload.size());
  if (stored != computed)
    throw fail("payload checksum mismatch (CRC32C stored " + hex32(stored) + ", computed " +
               hex32(computed) + "): the file is corrupt");
  return payload;
}

}  // namespace ddp::detail

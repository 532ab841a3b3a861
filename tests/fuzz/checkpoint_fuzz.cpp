// Fuzz target: a checkpoint file's bytes through the envelope reader (verified_payload: length,
// magic, header CRC, version, payload size, payload CRC). Malformed input must end in a
// ddp::DataError naming the file; anything else is a bug. An accepted file must be exactly what
// the writer makes of its payload (header == make_checkpoint_header(payload)), else abort().
//
// Input: one mode byte, then the file. Mode bit 0 set: the CRCs are recomputed over the file first
// (the payload CRC over bytes 32.. or over what is there, the header CRC over bytes 0..27), so the
// fuzzer also reaches the version and payload-size checks behind them instead of stopping at a
// checksum it cannot forge. Seeds: tests/fuzz/corpus/checkpoint/ (asis_* and fixcrc_* by mode).
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ddp/checkpoint/checkpoint_file.h"
#include "util/crc32c.h"

namespace {

void put_u32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// The CRC fields made right for whatever the rest of the file says.
void fix_crcs(std::string& file) {
  if (file.size() < ddp::detail::kCheckpointHeaderSize) return;
  const size_t payload = file.size() - ddp::detail::kCheckpointHeaderSize;
  put_u32(file, 24, ddp::util::crc32c(file.data() + ddp::detail::kCheckpointHeaderSize, payload));
  put_u32(file, 28, ddp::util::crc32c(file.data(), 28));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) fix_crcs(file);
  try {
    std::string_view payload = ddp::detail::verified_payload("fuzz.ddpckpt", file);
    const std::string header = ddp::detail::make_checkpoint_header(payload);
    if (file.size() != header.size() + payload.size() || file.compare(0, header.size(), header) != 0) std::abort();
  } catch (const ddp::DataError& e) {
    if (std::string(e.what()).find("fuzz.ddpckpt") == std::string::npos) std::abort();  // must name the file
  }
  return 0;
}

// Fuzz target: an event file's bytes as --tensorboard-dir's resume reads the files it finds there
// (src/trainer/tensorboard_writer.cpp, read_earlier_records): TFRecord framing with both masked
// CRC32Cs (split_records), then each record as a tensorboard.Event (parse_event: varints, wire
// types, nested Summary / Value / SessionLog). Malformed input must end in a ddp::DataError (a
// framing error naming the file); anything else is a bug. The complete records must re-frame to
// exactly the bytes they came from, else abort().
//
// Input: one mode byte, then the file. Mode bit 0 set: the rest is a list of records, each a length
// byte and that many bytes, framed with correct CRCs first, so the fuzzer reaches the protobuf
// parser instead of stopping at a checksum it cannot forge. Seeds: tests/fuzz/corpus/tfevents/
// (asis_* and framed_* by mode).
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trainer/tensorboard_event.h"
#include "trainer/tensorboard_record.h"

namespace tb = ddp::trainer::tensorboard;

namespace {

std::string framed(const uint8_t* data, size_t size) {
  std::string file;
  size_t at = 0;
  while (at < size) {
    const size_t n = std::min<size_t>(data[at], size - at - 1);
    file += tb::frame_record(std::string_view(reinterpret_cast<const char*>(data) + at + 1, n));
    at += 1 + n;
  }
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string file = (data[0] & 1) ? framed(data + 1, size - 1)
                                         : std::string(reinterpret_cast<const char*>(data) + 1, size - 1);
  tb::RecordScan scan;
  try {
    scan = tb::split_records(file, "fuzz.tfevents");
  } catch (const ddp::DataError& e) {
    if (std::string(e.what()).find("fuzz.tfevents") == std::string::npos) std::abort();  // must name the file
    return 0;
  }
  std::string again;
  for (auto r : scan.records) again += tb::frame_record(r);
  if (again != file.substr(0, scan.complete_bytes)) std::abort();
  if (scan.complete_bytes != file.size() && scan.torn_tail.empty()) std::abort();
  for (auto r : scan.records) {
    try {
      const tb::Event e = tb::parse_event(r);
      if (e.step < 0) std::abort();
    } catch (const ddp::DataError&) {
    }
  }
  return 0;
}

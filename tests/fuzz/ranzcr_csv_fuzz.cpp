// Fuzz target: the bytes of RANZCR's train.csv through parse_train_csv (what read_train_csv runs on
// the opened file). Malformed input must end in a ddp::DataError; anything else is a bug. A row
// that is accepted must name a file inside the image folder.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "data/ranzcr/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (const auto& r : ddp::data::ranzcr::parse_train_csv(in, "fuzz.csv")) {
      if (r.uid.empty() || r.uid.find('/') != std::string::npos || r.uid == "." || r.uid == "..") __builtin_trap();
    }
  } catch (const ddp::DataError&) {
  }
  return 0;
}

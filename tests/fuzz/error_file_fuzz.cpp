// Fuzz target: a worker's TORCHELASTIC_ERROR_FILE as ddprun reads it for its root-cause report
// (src/util/error_file.h). The file is written by whatever program ddprun runs (a Python worker's
// @record, a C++ trainer, anything that sets out to write there), so its bytes are outside input.
// Bad input must end in a ddp::ConfigError; a record that reads must write back (error_record_json)
// into JSON that reads the same; anything else (a crash, another exception, a hang) is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/error_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ddp::util::ErrorRecord r;
  try {
    r = ddp::util::parse_error_file(text, "error.json");
  } catch (const ddp::ConfigError&) {
    return 0;
  }
  if (r.old_shape) return 0;  // copied as it is, never rewritten
  // What a launcher writes from it (with an error code, as record_root_cause does) reads the same.
  r.error_code = 137;
  const ddp::util::ErrorRecord again = ddp::util::parse_error_file(ddp::util::error_record_json(r), "rewritten");
  if (again.message != r.message || again.callstack != r.callstack || again.timestamp != r.timestamp ||
      again.error_code != r.error_code || again.old_shape)
    __builtin_trap();
  return 0;
}

// Fuzz target: a worker's output line as ddprun's output pump looks at it, for a leading RFC 3339
// timestamp to keep in front of the rank prefix (util::leading_rfc3339). Any bytes must give 0 or a
// length inside the line that ends at a space after a timestamp's characters; reading past `size`
// (ASan), a crash or a wrong length is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/rfc3339.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so ASan reports a read one past the end.
  std::unique_ptr<char[]> line(new char[size ? size : 1]);
  if (size) std::memcpy(line.get(), data, size);
  const size_t n = ddp::util::leading_rfc3339(line.get(), size);
  if (n == 0) return 0;
  if (n > size || n < 21 || n > 36 || line[n - 1] != ' ') std::abort();
  for (size_t i = 0; i + 1 < n; ++i)
    if (!std::strchr("0123456789-T:.Z+", line[i])) std::abort();
  return 0;
}

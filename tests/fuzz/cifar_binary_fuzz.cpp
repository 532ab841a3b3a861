// Fuzz target: the bytes of a CIFAR-10 binary batch (data_batch_1.bin of cifar-10-batches-bin/)
// through parse_cifar_binary, as train_cifar10 reads it. Malformed input must end in a
// ddp::DataError; anything else is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/cifar/cifar_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ddp::data::cifar::CifarRecords r = ddp::data::cifar::parse_cifar_binary(std::vector<uint8_t>(data, data + size), "fuzz");
    if (r.pixels.size() != static_cast<size_t>(r.count) * ddp::data::cifar::kCifarImageBytes ||
        r.labels.size() != static_cast<size_t>(r.count))
      __builtin_trap();  // the parser's own promise
  } catch (const ddp::DataError&) {
  }
  return 0;
}

// Fuzz target: the bytes of a CIFAR-10 Python batch (data_batch_1 of cifar-10-batches-py/) through
// the pickle reader and the batch parser, as train_cifar10 reads them. Malformed input must end in
// a ddp::DataError; anything else (another exception, a crash, a sanitizer report, a leak, an
// allocation past libFuzzer's -rss_limit_mb) is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/cifar/cifar_files.h"
#include "data/cifar/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // The value tree on its own first (a pickle that is not a dict still walks every opcode).
    ddp::data::cifar::pickle::ValuePtr root = ddp::data::cifar::pickle::load(data, size, "fuzz");
    if (root->find("data")) root->find("data")->array_bytes();
  } catch (const ddp::DataError&) {
  }
  try {
    ddp::data::cifar::parse_cifar_pickle(std::vector<uint8_t>(data, data + size), "fuzz");
  } catch (const ddp::DataError&) {
  }
  return 0;
}

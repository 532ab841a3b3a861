// Fuzz target: the bytes of a dataset file given to make_cifar10_from_idx (gzip or not) through the
// gzip reader, the IDX parser and the CIFAR-10 conversion. Malformed input must end in a
// ddp::DataError or ConfigError; anything else (another exception, a crash, a sanitizer report, an
// allocation past libFuzzer's -rss_limit_mb) is a bug.
#include <ddp/errors.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/cifar/cifar_from_idx.h"
#include "data/common/gzip.h"
#include "data/idx/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::vector<uint8_t> bytes = ddp::data::gunzip_if_gzip(std::vector<uint8_t>(data, data + size), "fuzz", 64u << 20);
    ddp::data::IdxArray a = ddp::data::parse_idx(bytes.data(), bytes.size(), "fuzz");
    if (a.dims.size() == 3 && a.dims[0] <= 4096) {
      ddp::data::IdxArray labels;
      labels.dims = {a.dims[0]};
      for (uint32_t i = 0; i < a.dims[0]; ++i) labels.values.push_back(static_cast<uint8_t>(i % 11));  // 10 is invalid
      ddp::data::cifar::cifar_split_from_idx(a, labels, 0, "fuzz");
    }
  } catch (const ddp::DataError&) {
  } catch (const ddp::ConfigError&) {
  }
  return 0;
}

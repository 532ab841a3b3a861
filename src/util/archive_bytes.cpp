#include "util/archive_bytes.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace ddp::util {

std::string archive_bytes(torch::serialize::OutputArchive& archive) {
  std::string bytes;
  archive.save_to([&](const void* data, size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  return bytes;
}

void archive_from_bytes(const std::string& bytes, torch::serialize::InputArchive& archive) {
  archive.load_from(bytes.data(), bytes.size(), c10::Device(c10::kCPU));
}

}  // namespace ddp::util

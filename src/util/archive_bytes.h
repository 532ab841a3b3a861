#pragma once
// A LibTorch serialize archive as bytes and back: what travels between ranks (optimizer shards,
// per-rank checkpoint state) and what a checkpoint's payload is.
#include <string>

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace ddp::util {

/// The archive's serialized bytes (LibTorch's zip format).
std::string archive_bytes(torch::serialize::OutputArchive& archive);

/// Reads `bytes` (archive_bytes' output) into `archive`, tensors on the CPU. c10::Error when the
/// bytes are not an archive.
void archive_from_bytes(const std::string& bytes, torch::serialize::InputArchive& archive);

}  // namespace ddp::util

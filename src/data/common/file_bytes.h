#pragma once
// Whole-file reads that fail with a ddp::DataError naming the file and the reason.
//
//   std::vector<uint8_t> bytes = ddp::data::read_file_bytes(dir + "/test_batch.bin");

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data {

/// Reads the whole regular file. DataError: missing, a directory, unreadable, or short read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

bool is_regular_file(const std::string& path);

/// "dir/name" without doubling the slash.
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace ddp::data

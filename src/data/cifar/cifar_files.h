#pragma once
// Parsers for one CIFAR-10 batch file, in either published layout. No LibTorch here: records come
// back as plain bytes, the dataset assembles tensors.
//
//   CifarRecords r = ddp::data::cifar::parse_cifar_binary(bytes, path);   // data_batch_1.bin
//   CifarRecords r = ddp::data::cifar::parse_cifar_pickle(bytes, path);   // data_batch_1 (Python pickle)
//
// Every defect is a ddp::DataError naming the file and what is wrong.

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data::cifar {

constexpr int kCifarImageBytes = 3 * 32 * 32;            // 1024 R, 1024 G, 1024 B, row-major 32x32
constexpr int kCifarRecordBytes = 1 + kCifarImageBytes;  // binary layout: label byte first
constexpr int kCifarClasses = 10;

struct CifarRecords {
  int64_t count = 0;
  std::vector<uint8_t> pixels;  ///< count * 3072 bytes, [n][3][32][32]
  std::vector<uint8_t> labels;  ///< count labels in 0..9
};

/// The binary layout: whole 3073-byte records, label byte <= 9.
CifarRecords parse_cifar_binary(const std::vector<uint8_t>& bytes, const std::string& path);

/// The Python layout: a pickled dict with `data` (uint8 ndarray [n, 3072], C order) and `labels`
/// (a list of n ints in 0..9; an integer ndarray of n is accepted too).
CifarRecords parse_cifar_pickle(const std::vector<uint8_t>& bytes, const std::string& path);

}  // namespace ddp::data::cifar

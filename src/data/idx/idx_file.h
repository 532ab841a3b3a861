#pragma once
// The IDX format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist): a 4-byte magic
// (0, 0, element type, number of dimensions), one big-endian uint32 per dimension, then the
// elements in C order. Only unsigned bytes (type 0x08) are read: that is what image and label
// files hold. No LibTorch here.
//
//   IdxArray images = ddp::data::parse_idx(bytes, "train-images-idx3-ubyte");   // dims {60000, 28, 28}

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data {

struct IdxArray {
  std::vector<uint32_t> dims;   ///< e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> values;  ///< product(dims) bytes, C order
};

/// DataError naming `what` for a wrong magic, an element type other than ubyte, 0 or more than 4
/// dimensions, or a length that is not exactly header + product(dims) (the product is computed
/// without overflow).
IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& what);

/// Reads `path` (gzip-compressed or not) and parses it; at most 1 GiB once inflated.
IdxArray read_idx_file(const std::string& path);

}  // namespace ddp::data

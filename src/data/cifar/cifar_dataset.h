#pragma once
// CIFAR-10 decoded once into memory, from either published layout (auto-detected).
//
//   ddp::data::cifar::Cifar10Data d = ddp::data::cifar::load_cifar10("/data");   // holds cifar-10-batches-{bin,py}/
//   d.train.images  // uint8 [50000, 3, 32, 32]
//   d.train.labels  // int64 [50000]
//
// Layouts: `cifar-10-batches-bin/` (data_batch_{1..5}.bin, test_batch.bin) or `cifar-10-batches-py/`
// (data_batch_{1..5}, test_batch: pickled dicts). `data_dir` may also be one of those folders itself.
// When both are present the binary one is read (it is faster to parse). The five training batches
// must hold the same number of records (10,000 in the published data; fewer for synthetic sets).

#include <ATen/core/Tensor.h>

#include <string>

namespace ddp::data::cifar {

struct CifarSplit {
  at::Tensor images;  ///< uint8 [N, 3, 32, 32], contiguous, CPU
  at::Tensor labels;  ///< int64 [N], CPU
  int64_t size() const { return images.defined() ? images.size(0) : 0; }
};

enum class CifarLayout { kBinary, kPython };
const char* to_string(CifarLayout layout);

struct CifarLocation {
  std::string folder;  ///< the folder holding the batch files
  CifarLayout layout;
};

/// Finds the batch folder under (or at) `data_dir`. DataError when there is none.
CifarLocation locate_cifar10(const std::string& data_dir);

/// Paths of the five training batches and the test batch in `loc`.
std::vector<std::string> cifar10_train_files(const CifarLocation& loc);
std::string cifar10_test_file(const CifarLocation& loc);

struct Cifar10Data {
  CifarSplit train;
  CifarSplit test;
  CifarLocation location;
};

/// Reads and validates every batch file. DataError naming the file on any defect.
Cifar10Data load_cifar10(const std::string& data_dir);

}  // namespace ddp::data::cifar

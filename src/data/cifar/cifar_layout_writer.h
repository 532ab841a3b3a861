#pragma once
// Writes images in the published CIFAR-10 layouts, for every producer of CIFAR-10-shaped data
// (the synthetic generator, the IDX importer): cifar-10-batches-bin/ (3073-byte records) and
// cifar-10-batches-py/ (protocol-2 pickles as Python 2's cPickle wrote them).
//
//   write_cifar10_layout(CifarLayoutFiles{"/data/c10", train, test, names, "fashion_train", "fashion_test"});

#include <cstdint>
#include <string>
#include <vector>

#include "data/cifar/cifar_files.h"

namespace ddp::data::cifar {

struct CifarLayoutFiles {
  std::string out_dir;                   ///< created if missing
  const CifarRecords* train = nullptr;     ///< split evenly over data_batch_1..5 (a multiple of 5)
  const CifarRecords* test = nullptr;      ///< test_batch
  std::vector<std::string> class_names;  ///< batches.meta(.txt), in label order
  std::string train_name_prefix = "train";  ///< the Python layout's per-image `filenames`
  std::string test_name_prefix = "test";
  bool binary = true;
  bool python = true;
};

/// Writes each file to a temporary name and renames it into place. DataError naming the path when a
/// folder cannot be made or a file cannot be written; ConfigError when there is nothing to write.
void write_cifar10_layout(const CifarLayoutFiles& files);

}  // namespace ddp::data::cifar

#include "data/cifar/cifar_dataset.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <ATen/ATen.h>

#include <cstring>

#include "data/cifar/cifar_files.h"
#include "util/files.h"

namespace ddp::data::cifar {

const char* to_string(CifarLayout layout) { return layout == CifarLayout::kBinary ? "binary" : "python"; }

CifarLocation locate_cifar10(const std::string& data_dir) {
  if (data_dir.empty()) throw ConfigError("CIFAR-10 data directory is empty (pass --data-dir)");
  if (!util::is_directory(data_dir)) throw DataError(data_dir + ": CIFAR-10 data directory not found");
  const std::string bin = util::join_path(data_dir, "cifar-10-batches-bin");
  const std::string py = util::join_path(data_dir, "cifar-10-batches-py");
  if (util::is_directory(bin)) {
    if (util::is_directory(py)) DDP_LOG(INFO) << data_dir << " holds both CIFAR-10 layouts; reading the binary one";
    return {bin, CifarLayout::kBinary};
  }
  if (util::is_directory(py)) return {py, CifarLayout::kPython};
  // The folder itself may be a batch folder.
  if (util::is_regular_file(util::join_path(data_dir, "data_batch_1.bin"))) return {data_dir, CifarLayout::kBinary};
  if (util::is_regular_file(util::join_path(data_dir, "data_batch_1"))) return {data_dir, CifarLayout::kPython};
  throw DataError(data_dir + ": no CIFAR-10 data (expected a cifar-10-batches-bin/ or cifar-10-batches-py/ folder in it)");
}

std::vector<std::string> cifar10_train_files(const CifarLocation& loc) {
  std::vector<std::string> files;
  const char* suffix = loc.layout == CifarLayout::kBinary ? ".bin" : "";
  for (int i = 1; i <= 5; ++i) files.push_back(util::join_path(loc.folder, "data_batch_" + std::to_string(i) + suffix));
  return files;
}

std::string cifar10_test_file(const CifarLocation& loc) {
  return util::join_path(loc.folder, loc.layout == CifarLayout::kBinary ? "test_batch.bin" : "test_batch");
}

namespace {

CifarRecords read_batch(const std::string& path, CifarLayout layout) {
  std::vector<uint8_t> bytes = util::read_file_bytes(path);
  return layout == CifarLayout::kBinary ? parse_cifar_binary(bytes, path) : parse_cifar_pickle(bytes, path);
}

CifarSplit to_split(const std::vector<CifarRecords>& parts) {
  int64_t total = 0;
  for (auto& p : parts) total += p.count;
  CifarSplit s;
  s.images = at::empty({total, 3, 32, 32}, at::kByte);
  s.labels = at::empty({total}, at::kLong);
  uint8_t* img = s.images.data_ptr<uint8_t>();
  int64_t* lab = s.labels.data_ptr<int64_t>();
  for (auto& p : parts) {
    std::memcpy(img, p.pixels.data(), p.pixels.size());
    img += p.pixels.size();
    for (uint8_t l : p.labels) *lab++ = l;
  }
  return s;
}

}  // namespace

Cifar10Data load_cifar10(const std::string& data_dir) {
  Cifar10Data d;
  d.location = locate_cifar10(data_dir);
  const CifarLayout layout = d.location.layout;
  std::vector<std::string> files = cifar10_train_files(d.location);
  files.push_back(cifar10_test_file(d.location));

  // One file at a time keeps the peak memory at ~3 copies of one 30 MB batch.
  std::vector<CifarRecords> train;
  for (size_t i = 0; i + 1 < files.size(); ++i) train.push_back(read_batch(files[i], layout));
  std::vector<CifarRecords> test;
  test.push_back(read_batch(files.back(), layout));

  for (size_t i = 1; i < train.size(); ++i) {
    if (train[i].count != train[0].count)
      throw DataError(files[i] + ": " + std::to_string(train[i].count) + " records, but " + files[0] + " has " +
                      std::to_string(train[0].count) + " (all training batches must hold the same number)");
  }
  d.train = to_split(train);
  d.test = to_split(test);
  DDP_LOG(INFO) << "CIFAR-10 (" << to_string(layout) << ") from " << d.location.folder << ": " << d.train.size()
                << " training and " << d.test.size() << " test images";
  return d;
}

}  // namespace ddp::data::cifar

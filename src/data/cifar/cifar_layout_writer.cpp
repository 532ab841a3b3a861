#include "data/cifar/cifar_layout_writer.h"

#include <ddp/errors.h>

#include <cstdio>
#include <cstring>

#include "data/cifar/cifar_files.h"
#include "data/cifar/pickle_writer.h"
#include "util/files.h"

namespace ddp::data::cifar {
namespace {

constexpr int kTrainFiles = 5;

void write_cifar_file(const std::string& path, const std::string& bytes) { util::write_file_atomically(path, {bytes}); }

std::string binary_records(const CifarRecords& s, int64_t begin, int64_t n) {
  std::string out(static_cast<size_t>(n) * kCifarRecordBytes, '\0');
  for (int64_t i = 0; i < n; ++i) {
    out[i * kCifarRecordBytes] = static_cast<char>(s.labels[begin + i]);
    std::memcpy(&out[i * kCifarRecordBytes + 1], s.pixels.data() + (begin + i) * kCifarImageBytes, kCifarImageBytes);
  }
  return out;
}

std::string python_batch(const CifarRecords& s, int64_t begin, int64_t n, const std::string& label,
                         const std::string& name_prefix) {
  std::vector<uint8_t> labels(s.labels.begin() + begin, s.labels.begin() + begin + n);
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_%06lld.png", static_cast<long long>(begin + i));
    names.push_back(name_prefix + buf);
  }
  return cifar_batch_pickle(label, s.pixels.data() + begin * kCifarImageBytes, n, labels, names);
}

void check_split(const CifarRecords* s, const char* which) {
  if (!s || s->count < 1) throw ConfigError(std::string("CIFAR-10 layout: the ") + which + " split is empty");
  if (s->pixels.size() != static_cast<size_t>(s->count) * kCifarImageBytes || s->labels.size() != static_cast<size_t>(s->count))
    throw ConfigError(std::string("CIFAR-10 layout: the ") + which + " split's pixels or labels do not match its count");
}

}  // namespace

void write_cifar10_layout(const CifarLayoutFiles& f) {
  if (f.out_dir.empty()) throw ConfigError("CIFAR-10 layout: no output directory given");
  if (!f.binary && !f.python) throw ConfigError("CIFAR-10 layout: no layout selected");
  check_split(f.train, "training");
  check_split(f.test, "test");
  // The readers (ours and torchvision's) expect five equal training batches.
  if (f.train->count % kTrainFiles != 0)
    throw ConfigError("CIFAR-10 layout: " + std::to_string(f.train->count) +
                      " training images is not a multiple of 5 (they are split evenly over data_batch_1..5)");
  const int64_t per_file = f.train->count / kTrainFiles;
  int64_t begin[kTrainFiles + 1] = {0};  // file b holds [begin[b], begin[b + 1])
  for (int b = 0; b < kTrainFiles; ++b) begin[b + 1] = begin[b] + per_file;

  if (f.binary) {
    const std::string dir = util::join_path(f.out_dir, "cifar-10-batches-bin");
    util::make_dirs(dir);
    for (int b = 0; b < kTrainFiles; ++b)
      write_cifar_file(util::join_path(dir, "data_batch_" + std::to_string(b + 1) + ".bin"),
                 binary_records(*f.train, begin[b], begin[b + 1] - begin[b]));
    write_cifar_file(util::join_path(dir, "test_batch.bin"), binary_records(*f.test, 0, f.test->count));
    std::string meta;
    for (const auto& n : f.class_names) meta += n + "\n";
    write_cifar_file(util::join_path(dir, "batches.meta.txt"), meta);
  }
  if (f.python) {
    const std::string dir = util::join_path(f.out_dir, "cifar-10-batches-py");
    util::make_dirs(dir);
    for (int b = 0; b < kTrainFiles; ++b) {
      const std::string label = "training batch " + std::to_string(b + 1) + " of 5";
      write_cifar_file(util::join_path(dir, "data_batch_" + std::to_string(b + 1)),
                 python_batch(*f.train, begin[b], begin[b + 1] - begin[b], label, f.train_name_prefix));
    }
    write_cifar_file(util::join_path(dir, "test_batch"), python_batch(*f.test, 0, f.test->count, "testing batch 1 of 1", f.test_name_prefix));
    write_cifar_file(util::join_path(dir, "batches.meta"), cifar_meta_pickle(begin[1], f.class_names));
  }
}

}  // namespace ddp::data::cifar

#include "data/cifar/cifar_synthetic.h"

#include <ddp/errors.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "data/cifar/cifar_files.h"
#include "data/cifar/pickle_writer.h"
#include "data/common/counter_rng.h"
#include "data/common/file_bytes.h"

namespace ddp::data {
namespace {

// Well-separated RGB colours, one per class.
const float kPalette[10][3] = {{230, 40, 40},  {40, 200, 40},  {40, 40, 230},  {220, 220, 40},  {220, 40, 220},
                               {40, 220, 220}, {240, 140, 30}, {130, 60, 200}, {120, 120, 120}, {250, 250, 250}};

// Approximately standard normal: a sum of four uniforms, rescaled (variance 1).
float normalish(CounterRng& rng) {
  double s = rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform() - 2.0;
  return static_cast<float>(s * std::sqrt(3.0));
}

void make_image(CounterRng& rng, int label, float signal, float noise, uint8_t* out) {
  const float kPi = 3.14159265358979f;
  const float brightness = 0.6f + 0.4f * static_cast<float>(rng.uniform());
  const float freq = 2.0f * kPi * static_cast<float>(1 + label % 5) / 16.0f;
  const float phase = 2.0f * kPi * static_cast<float>(rng.uniform());
  const bool horizontal = label < 5;  // stripes vary along y
  for (int c = 0; c < 3; ++c) {
    const float base = (kPalette[label][c] * brightness * signal + 128.0f * (1.0f - signal)) * 0.8f + 20.0f;
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        const float coord = static_cast<float>(horizontal ? y : x);
        float v = base + 40.0f * signal * std::sin(freq * coord + phase) + noise * normalish(rng);
        v = std::min(255.0f, std::max(0.0f, v));
        out[c * 1024 + y * 32 + x] = static_cast<uint8_t>(v);
      }
    }
  }
}

void make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw DataError(partial + ": cannot create directory (" + std::strerror(errno) + ")");
  }
  if (!is_directory(path)) throw DataError(path + ": not a directory");
}

void write_file(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw DataError(path + ": cannot write (" + std::strerror(errno) + ")");
  size_t written = size ? std::fwrite(data, 1, size, f) : 0;
  bool ok = written == size && std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw DataError(path + ": write failed");
  }
}
void write_file(const std::string& path, const std::string& bytes) { write_file(path, bytes.data(), bytes.size()); }

std::string binary_records(const SyntheticSplit& s, int64_t begin, int64_t n) {
  std::string out(static_cast<size_t>(n) * kCifarRecordBytes, '\0');
  for (int64_t i = 0; i < n; ++i) {
    out[i * kCifarRecordBytes] = static_cast<char>(s.labels[begin + i]);
    std::memcpy(&out[i * kCifarRecordBytes + 1], s.pixels.data() + (begin + i) * kCifarImageBytes, kCifarImageBytes);
  }
  return out;
}

std::string python_batch(const SyntheticSplit& s, int64_t begin, int64_t n, const std::string& label,
                         const std::string& name_prefix) {
  std::vector<uint8_t> labels(s.labels.begin() + begin, s.labels.begin() + begin + n);
  std::vector<std::string> names;
  names.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s_%06lld.png", name_prefix.c_str(), static_cast<long long>(begin + i));
    names.emplace_back(buf);
  }
  return cifar_batch_pickle(label, s.pixels.data() + begin * kCifarImageBytes, n, labels, names);
}

}  // namespace

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

SyntheticSplit generate_synthetic_split(uint64_t seed, int split, int64_t n, double signal, double noise) {
  SyntheticSplit s;
  s.count = n;
  s.pixels.resize(static_cast<size_t>(n) * kCifarImageBytes);
  s.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    CounterRng rng(seed, static_cast<uint64_t>(split) + 1000, static_cast<uint64_t>(i));
    const int label = static_cast<int>(rng.uniform_int(10));
    s.labels[i] = static_cast<uint8_t>(label);
    make_image(rng, label, static_cast<float>(signal), static_cast<float>(noise), s.pixels.data() + i * kCifarImageBytes);
  }
  return s;
}

void write_synthetic_cifar10(const SyntheticCifarOptions& o) {
  if (o.out_dir().empty()) throw ConfigError("synthetic CIFAR-10: no output directory given");
  if (o.train() < 5 || o.train() % 5 != 0)
    throw ConfigError("synthetic CIFAR-10: --train " + std::to_string(o.train()) +
                      " must be a positive multiple of 5 (it is split evenly over data_batch_1..5)");
  if (o.train() > 5 * 1000000) throw ConfigError("synthetic CIFAR-10: --train " + std::to_string(o.train()) + " is too large");
  if (o.test() < 1 || o.test() > 1000000)
    throw ConfigError("synthetic CIFAR-10: --test " + std::to_string(o.test()) + " must be in 1..1000000");
  if (!o.write_binary() && !o.write_python()) throw ConfigError("synthetic CIFAR-10: no layout selected");
  if (!(o.signal() >= 0 && o.signal() <= 1)) throw ConfigError("synthetic CIFAR-10: --signal " + std::to_string(o.signal()) + " must be in [0, 1]");
  if (!(o.noise() >= 0 && o.noise() <= 255)) throw ConfigError("synthetic CIFAR-10: --noise " + std::to_string(o.noise()) + " must be in [0, 255]");

  const SyntheticSplit train = generate_synthetic_split(o.seed(), 0, o.train(), o.signal(), o.noise());
  const SyntheticSplit test = generate_synthetic_split(o.seed(), 1, o.test(), o.signal(), o.noise());
  const int64_t per_file = o.train() / 5;
  const auto& names = cifar10_class_names();

  if (o.write_binary()) {
    const std::string dir = join_path(o.out_dir(), "cifar-10-batches-bin");
    make_dirs(dir);
    for (int b = 0; b < 5; ++b)
      write_file(join_path(dir, "data_batch_" + std::to_string(b + 1) + ".bin"), binary_records(train, b * per_file, per_file));
    write_file(join_path(dir, "test_batch.bin"), binary_records(test, 0, o.test()));
    std::string meta;
    for (auto& n : names) meta += n + "\n";
    write_file(join_path(dir, "batches.meta.txt"), meta);
  }
  if (o.write_python()) {
    const std::string dir = join_path(o.out_dir(), "cifar-10-batches-py");
    make_dirs(dir);
    for (int b = 0; b < 5; ++b) {
      std::string label = "training batch " + std::to_string(b + 1) + " of 5";
      write_file(join_path(dir, "data_batch_" + std::to_string(b + 1)), python_batch(train, b * per_file, per_file, label, "synthetic_train"));
    }
    write_file(join_path(dir, "test_batch"), python_batch(test, 0, o.test(), "testing batch 1 of 1", "synthetic_test"));
    write_file(join_path(dir, "batches.meta"), cifar_meta_pickle(per_file, names));
  }
}

}  // namespace ddp::data

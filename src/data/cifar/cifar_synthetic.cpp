#include "data/cifar/cifar_synthetic.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cmath>

#include "data/cifar/cifar_files.h"
#include "data/cifar/cifar_layout_writer.h"
#include "data/common/counter_rng.h"

namespace ddp::data::cifar {
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

}  // namespace

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

CifarRecords generate_synthetic_split(uint64_t seed, int split, int64_t n, double signal, double noise) {
  CifarRecords s;
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

  const CifarRecords train = generate_synthetic_split(o.seed(), 0, o.train(), o.signal(), o.noise());
  const CifarRecords test = generate_synthetic_split(o.seed(), 1, o.test(), o.signal(), o.noise());
  CifarLayoutFiles files;
  files.out_dir = o.out_dir();
  files.train = &train;
  files.test = &test;
  files.class_names = cifar10_class_names();
  files.train_name_prefix = "synthetic_train";
  files.test_name_prefix = "synthetic_test";
  files.binary = o.write_binary();
  files.python = o.write_python();
  write_cifar10_layout(files);
}

}  // namespace ddp::data::cifar

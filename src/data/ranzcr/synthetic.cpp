#include "data/ranzcr/synthetic.h"

#include "data/ranzcr/random.h"
#include "data/ranzcr/records.h"

#include <ddp/errors.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "util/files.h"

namespace ddp::data::ranzcr {
namespace {

// Share of positives per column: between 0.2 and 0.45, like a rebalanced version of the real data.
constexpr double kPositiveRate[kNumLabels] = {0.2, 0.25, 0.4, 0.2, 0.25, 0.3, 0.4, 0.25, 0.35, 0.45, 0.2};

struct Item {
  std::string uid;
  std::string patient;
  std::array<float, kNumLabels> labels;
};

std::string make_uid(Rng& rng, int64_t index) {
  // Looks like the real ones (1.2.826.0.1.3680043.8.498.<digits>); the index keeps them unique.
  char buf[96];
  std::snprintf(buf, sizeof buf, "1.2.826.0.1.3680043.8.498.%llu%06lld",
                static_cast<unsigned long long>(rng.next() % 10000000000000ULL), static_cast<long long>(index));
  return buf;
}

std::vector<Item> make_items(int64_t n, const std::vector<std::string>& patients, Rng& rng, int64_t uid_offset) {
  std::vector<Item> items(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Item& it = items[static_cast<size_t>(i)];
    it.uid = make_uid(rng, uid_offset + i);
    it.patient = patients[rng.below(patients.size())];
    for (int c = 0; c < kNumLabels; ++c) it.labels[c] = rng.uniform(0, 1) < kPositiveRate[c] ? 1.f : 0.f;
  }
  // Both classes in every column whenever there are two images.
  if (n >= 2) {
    for (int c = 0; c < kNumLabels; ++c) {
      bool pos = false, neg = false;
      for (auto& it : items) (it.labels[c] == 1.f ? pos : neg) = true;
      if (!pos) items[static_cast<size_t>(c % n)].labels[c] = 1.f;
      if (!neg) items[static_cast<size_t>((c + 1) % n)].labels[c] = 0.f;
    }
  }
  // Every patient has at least one image when there are enough images.
  for (size_t p = 0; p < patients.size() && p < items.size(); ++p) items[p].patient = patients[p];
  return items;
}

void draw_pattern(cv::Mat& img, int column, Rng& rng) {
  const double w = img.cols;
  const int cell_x = column % 4, cell_y = column / 4;
  const double cx = (cell_x + 0.5) / 4.0 * w + rng.uniform(-0.03, 0.03) * w;
  const double cy = (cell_y + 0.5) / 3.0 * w + rng.uniform(-0.03, 0.03) * w;
  const double angle = (column % 4) * CV_PI / 4.0 + rng.uniform(-0.05, 0.05);
  const double half = 0.1 * w;
  const int thickness = std::max(2, static_cast<int>(std::lround(w / 48.0)));
  const cv::Scalar color(static_cast<double>(205 + rng.below(50)));
  const cv::Point2d dir(std::cos(angle), std::sin(angle)), normal(-std::sin(angle), std::cos(angle));
  auto segment = [&](double from, double to, double offset) {
    cv::Point2d a(cx + dir.x * from + normal.x * offset, cy + dir.y * from + normal.y * offset);
    cv::Point2d b(cx + dir.x * to + normal.x * offset, cy + dir.y * to + normal.y * offset);
    cv::line(img, a, b, color, thickness, cv::LINE_AA);
  };
  switch (column / 4) {
    case 0:  // solid
      segment(-half, half, 0);
      break;
    case 1: {  // dashed: 4 dashes
      const double step = 2 * half / 7;
      for (int k = 0; k < 7; k += 2) segment(-half + k * step, -half + (k + 1) * step, 0);
      break;
    }
    default:  // double line
      segment(-half, half, -1.5 * thickness);
      segment(-half, half, 1.5 * thickness);
      break;
  }
}

cv::Mat render(const Item& item, int size, uint64_t seed, uint64_t stream) {
  Rng rng = Rng::for_stream(seed, 0x5eed, stream);
  cv::Mat img(size, size, CV_8UC1);
  // Dark background with a vertical gradient and a brighter "chest" ellipse.
  for (int y = 0; y < size; ++y) img.row(y).setTo(cv::Scalar(20 + 30.0 * y / size));
  cv::ellipse(img, cv::Point(size / 2, size / 2 + size / 20), cv::Size(size * 2 / 5, size * 9 / 20), 0, 0, 360,
              cv::Scalar(static_cast<double>(70 + rng.below(30))), cv::FILLED, cv::LINE_AA);
  cv::Mat noise(size, size, CV_8UC1);  // our own seeded noise: reproducible across OpenCV versions
  for (int y = 0; y < size; ++y) {
    uint8_t* row = noise.ptr<uint8_t>(y);
    for (int x = 0; x < size; ++x) row[x] = static_cast<uint8_t>(rng.below(24));
  }
  img += noise;
  // A light blur keeps film-grain-like noise, so full-size files weigh about as much as real X-rays.
  cv::GaussianBlur(img, img, cv::Size(3, 3), 0);
  for (int c = 0; c < kNumLabels; ++c) {
    if (item.labels[c] == 1.f) draw_pattern(img, c, rng);
  }
  return img;
}

void write_csv(const std::string& path, const std::vector<Item>& items) {
  std::ofstream out(path, std::ios::trunc);
  out << "StudyInstanceUID";
  for (const auto& c : label_columns()) out << ',' << c;
  out << ",PatientID\n";
  for (const auto& it : items) {
    out << it.uid;
    for (float v : it.labels) out << ',' << (v == 1.f ? 1 : 0);
    out << ',' << it.patient << '\n';
  }
  if (!out) throw ddp::DataError("cannot write '" + path + "'");
}

void write_images(const std::vector<Item>& items, const std::string& dir, const SyntheticOptions& o,
                  uint64_t stream_offset) {
  util::make_dirs(dir);
  int threads = o.threads() > 0 ? o.threads() : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, items.size())));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    const std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, o.jpeg_quality()};
    for (size_t i = next++; i < items.size(); i = next++) {
      try {
        cv::Mat img = render(items[i], o.size(), o.seed(), stream_offset + i);
        const std::string path = dir + "/" + items[i].uid + ".jpg";
        if (!cv::imwrite(path, img, params)) throw ddp::DataError("cannot write image '" + path + "'");
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = items.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void write_synthetic_dataset(const SyntheticOptions& o) {
  if (o.dir().empty()) throw ddp::ConfigError("synthetic dataset: --out folder is empty");
  if (o.images() < 1) throw ddp::ConfigError("synthetic dataset: --n must be >= 1, got " + std::to_string(o.images()));
  if (o.test_images() < 0) throw ddp::ConfigError("synthetic dataset: --n-test must be >= 0");
  if (o.size() < 16 || o.size() > 8192) {
    throw ddp::ConfigError("synthetic dataset: --size must be in [16, 8192], got " + std::to_string(o.size()));
  }
  if (o.jpeg_quality() < 1 || o.jpeg_quality() > 100) {
    throw ddp::ConfigError("synthetic dataset: --quality must be in [1, 100], got " + std::to_string(o.jpeg_quality()));
  }
  const int64_t n_patients = o.patients() > 0 ? o.patients() : std::max<int64_t>(1, o.images() / 3);
  if (o.patients() < 0 || n_patients > o.images() + o.test_images()) {
    throw ddp::ConfigError("synthetic dataset: --patients must be in [0, images], got " + std::to_string(o.patients()));
  }
  Rng rng(o.seed());
  std::set<std::string> seen;
  std::vector<std::string> patients;
  while (static_cast<int64_t>(patients.size()) < n_patients) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%09llx", static_cast<unsigned long long>(rng.next() & 0xfffffffffULL));
    if (seen.insert(buf).second) patients.push_back(buf);
  }
  util::make_dirs(o.dir());
  auto train = make_items(o.images(), patients, rng, 0);
  write_images(train, o.dir() + "/train", o, 0);
  write_csv(o.dir() + "/train.csv", train);
  if (o.test_images() > 0) {
    auto test = make_items(o.test_images(), patients, rng, o.images());
    write_images(test, o.dir() + "/test", o, static_cast<uint64_t>(o.images()));
    write_csv(o.dir() + "/test_labels.csv", test);
  }
}

}  // namespace ddp::data::ranzcr

// RANZCR data: train.csv errors, patient-grouped splits, JPEG decoding, the cache and the loader.
#include "data/ranzcr/image.h"
#include "data/ranzcr/image_cache.h"
#include "data/ranzcr/jpeg_header.h"
#include "data/ranzcr/loader.h"
#include "data/ranzcr/records.h"
#include "data/ranzcr/split.h"
#include "data/ranzcr/synthetic.h"
#include "support/multiprocess.h"
#include "util/files.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace ddp::data::ranzcr;
namespace fs = std::filesystem;

namespace {

const std::string kHeader =
    "StudyInstanceUID,ETT - Abnormal,ETT - Borderline,ETT - Normal,NGT - Abnormal,NGT - Borderline,"
    "NGT - Incompletely Imaged,NGT - Normal,CVC - Abnormal,CVC - Borderline,CVC - Normal,"
    "Swan Ganz Catheter Present,PatientID";

std::string write_text(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Expects read_train_csv to throw a DataError whose message holds every fragment.
void expect_csv_error(const std::string& text, std::vector<std::string> fragments) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-csv");
  const std::string path = write_text(dir, "train.csv", text);
  try {
    read_train_csv(path);
    ADD_FAILURE() << "expected DataError for:\n" << text;
  } catch (const ddp::DataError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
  }
  fs::remove_all(dir);
}

std::string row(const std::string& uid, const std::string& labels, const std::string& patient) {
  return uid + "," + labels + "," + patient + "\n";
}
const std::string kZeros = "0,0,0,0,0,0,0,0,0,0,0";

// A small synthetic dataset shared by the loader tests (64x64 images).
const std::string& synthetic_dir() {
  static const std::string dir = [] {
    std::string d = ddp::testing::make_temp_dir("ranzcr-synth");
    write_synthetic_dataset(SyntheticOptions().dir(d).images(40).test_images(6).size(64).patients(12).seed(7).threads(2));
    return d;
  }();
  return dir;
}

std::shared_ptr<Dataset> synthetic_dataset() {
  return std::make_shared<Dataset>(read_train_csv(synthetic_dir() + "/train.csv"), synthetic_dir() + "/train");
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

std::vector<Batch> all_batches(BatchLoader& loader, std::vector<int64_t> indices, uint64_t epoch) {
  loader.start_epoch(std::move(indices), epoch);
  std::vector<Batch> out;
  Batch b;
  while (loader.next(&b)) out.push_back(b);
  return out;
}

}  // namespace

// ---- train.csv ------------------------------------------------------------------------------------

TEST(RanzcrCsv, ReadsColumnsByNameInAnyOrderWithSpacesBomAndCrlf) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-csv");
  // PatientID first, labels reversed, a space after each comma as in the issue text.
  std::string header = "\xEF\xBB\xBFPatientID, ";
  const auto& cols = label_columns();
  for (int c = kNumLabels - 1; c >= 0; --c) header += cols[c] + ", ";
  header += "StudyInstanceUID\r\n";
  const std::string text = header + "p1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1.2.3\r\n" +
                           "p2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, \"1.2.4\"\r\n";
  auto records = read_train_csv(write_text(dir, "train.csv", text));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].uid, "1.2.3");
  EXPECT_EQ(records[0].patient_id, "p1");
  EXPECT_EQ(records[0].file_name, "1.2.3.jpg");
  EXPECT_EQ(records[0].labels[kNumLabels - 1], 1.f);  // "Swan Ganz" came first in this header
  EXPECT_EQ(records[0].labels[0], 1.f);               // "ETT - Abnormal" came last
  EXPECT_EQ(records[1].uid, "1.2.4");
  EXPECT_EQ(records[1].labels[1], 1.f);
  for (int c = 0; c < kNumLabels; ++c) EXPECT_EQ(records[1].labels[c], c == 1 ? 1.f : 0.f) << c;
  fs::remove_all(dir);
}

TEST(RanzcrCsv, ErrorsNameTheColumnRowAndValue) {
  expect_csv_error("", {"empty"});
  expect_csv_error(kHeader + "\n", {"no rows"});
  // Missing column: drop "CVC - Normal".
  std::string missing = kHeader;
  missing.replace(missing.find(",CVC - Normal"), std::string(",CVC - Normal").size(), "");
  expect_csv_error(missing + "\n", {"missing column 'CVC - Normal'"});
  expect_csv_error(kHeader + ",Extra\n", {"unknown column 'Extra'"});
  expect_csv_error(kHeader + ",PatientID\n", {"'PatientID' appears twice"});
  expect_csv_error(kHeader + "\n" + row("1.2.3", "0,0,2,0,0,0,0,0,0,0,0", "p"),
                   {"line 2", "'ETT - Normal'", "value '2'"});
  expect_csv_error(kHeader + "\n" + row("1.2.3", kZeros, "p") + row("1.2.4", "0,0,0,0,0,0,0,0,0,yes,0", "p"),
                   {"line 3", "'CVC - Normal'", "value 'yes'"});
  expect_csv_error(kHeader + "\n" + row("1.2.3", "0,0,0,0,0,,0,0,0,0,0", "p"), {"line 2", "'NGT - Incompletely Imaged'", "value ''"});
  expect_csv_error(kHeader + "\n" + row("1.2.3", kZeros, "p") + row("1.2.5", kZeros, "q") + row("1.2.3", kZeros, "r"),
                   {"line 4", "duplicate StudyInstanceUID '1.2.3'", "first on line 2"});
  expect_csv_error(kHeader + "\n" + "1.2.3,0,0\n", {"line 2", "3 fields", "13"});
  expect_csv_error(kHeader + "\n" + row("1.2.3", kZeros, ""), {"line 2", "empty PatientID"});
  expect_csv_error(kHeader + "\n" + row("../etc/passwd", kZeros, "p"), {"line 2", "bad StudyInstanceUID"});
  try {
    read_train_csv("/nonexistent/train.csv");
    ADD_FAILURE() << "expected DataError";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/train.csv"), std::string::npos);
  }
}

TEST(RanzcrCsv, SubmissionHasKaggleHeaderAndRows) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-sub");
  std::vector<float> p(2 * kNumLabels);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i) / 100.f;
  write_submission(dir + "/submission.csv", {"1.2.3", "1.2.4"}, p);
  std::ifstream in(dir + "/submission.csv");
  std::string header, first, second;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  std::string expected = "StudyInstanceUID";
  for (const auto& c : label_columns()) expected += "," + c;
  EXPECT_EQ(header, expected);
  EXPECT_EQ(first.substr(0, 15), "1.2.3,0.000000,");
  EXPECT_EQ(split_csv_line(second).size(), 12u);
  EXPECT_EQ(split_csv_line(second)[11], "0.210000");
  int entries = 0;  // the submission only: no temporary left behind
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().filename() == "submission.csv" ? 1 : 100;
  EXPECT_EQ(entries, 1);
  EXPECT_THROW(write_submission(dir + "/x.csv", {"a"}, p), ddp::DataError);
  fs::remove_all(dir);
}

// ---- splits ---------------------------------------------------------------------------------------

namespace {
std::vector<Record> records_with_patients(int n, int patients, uint64_t seed) {
  Rng rng(seed);
  std::vector<Record> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    r[static_cast<size_t>(i)].uid = "u" + std::to_string(i);
    // Skewed patient sizes: some patients have many images.
    const uint64_t p = rng.below(static_cast<uint64_t>(patients)) * rng.below(static_cast<uint64_t>(patients)) /
                       static_cast<uint64_t>(patients);
    r[static_cast<size_t>(i)].patient_id = "p" + std::to_string(i < patients ? i : static_cast<int>(p));
  }
  return r;
}

std::set<std::string> patients_of(const std::vector<Record>& r, const std::vector<int64_t>& idx) {
  std::set<std::string> s;
  for (auto i : idx) s.insert(r[static_cast<size_t>(i)].patient_id);
  return s;
}
}  // namespace

TEST(RanzcrSplit, NoPatientOnBothSidesAndEveryImageOnce) {
  auto records = records_with_patients(1000, 300, 1);
  for (uint64_t seed : {1, 2, 3}) {
    Split s = split_by_patient(records, 0.2, seed);
    auto train = patients_of(records, s.train), val = patients_of(records, s.val);
    for (const auto& p : val) EXPECT_EQ(train.count(p), 0u) << "patient " << p << " on both sides";
    EXPECT_EQ(s.train.size() + s.val.size(), records.size());
    std::set<int64_t> all(s.train.begin(), s.train.end());
    all.insert(s.val.begin(), s.val.end());
    EXPECT_EQ(all.size(), records.size());
    EXPECT_EQ(val.size(), 60u);  // 20% of 300 patients
  }
  // Deterministic for a seed, different across seeds.
  EXPECT_EQ(split_by_patient(records, 0.2, 1).val, split_by_patient(records, 0.2, 1).val);
  EXPECT_NE(split_by_patient(records, 0.2, 1).val, split_by_patient(records, 0.2, 2).val);
  EXPECT_TRUE(split_by_patient(records, 0.0, 1).val.empty());
  EXPECT_THROW(split_by_patient(records, 1.0, 1), ddp::ConfigError);
  EXPECT_THROW(split_by_patient(records, -0.1, 1), ddp::ConfigError);
  EXPECT_THROW(split_by_patient(records_with_patients(5, 1, 1), 0.2, 1), ddp::ConfigError);
}

TEST(RanzcrSplit, FoldsPartitionThePatients) {
  auto records = records_with_patients(1000, 300, 4);
  const int k = 5;
  std::set<std::string> seen_val;
  std::vector<int64_t> every_val;
  for (int fold = 0; fold < k; ++fold) {
    Split s = kfold_by_patient(records, k, fold, 1);
    auto train = patients_of(records, s.train), val = patients_of(records, s.val);
    for (const auto& p : val) {
      EXPECT_EQ(train.count(p), 0u);
      EXPECT_TRUE(seen_val.insert(p).second) << "patient " << p << " validates in two folds";
    }
    EXPECT_EQ(s.train.size() + s.val.size(), records.size());
    // Balanced by image count: each fold within 5% of n / k.
    EXPECT_NEAR(static_cast<double>(s.val.size()), 1000.0 / k, 10.0);
    every_val.insert(every_val.end(), s.val.begin(), s.val.end());
  }
  EXPECT_EQ(seen_val.size(), 300u);
  std::sort(every_val.begin(), every_val.end());
  EXPECT_EQ(every_val, iota(1000));
  EXPECT_THROW(kfold_by_patient(records, 1, 0, 1), ddp::ConfigError);
  EXPECT_THROW(kfold_by_patient(records, 5, 5, 1), ddp::ConfigError);
  EXPECT_THROW(kfold_by_patient(records_with_patients(3, 3, 1), 5, 0, 1), ddp::ConfigError);
}

// ---- images ---------------------------------------------------------------------------------------

TEST(RanzcrImage, JpegDimensionsAndReducedDecoding) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-img");
  cv::Mat img(1600, 2048, CV_8UC1);  // rows = height 1600, cols = width 2048
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) img.at<uint8_t>(y, x) = static_cast<uint8_t>((x / 8 + y / 5) % 256);
  cv::GaussianBlur(img, img, cv::Size(9, 9), 0);
  ASSERT_TRUE(cv::imwrite(dir + "/a.jpg", img, {cv::IMWRITE_JPEG_QUALITY, 95}));
  auto bytes = ddp::util::read_file_bytes(dir + "/a.jpg");
  int w = 0, h = 0;
  ASSERT_TRUE(jpeg_dimensions(bytes.data(), bytes.size(), &w, &h));
  EXPECT_EQ(w, 2048);
  EXPECT_EQ(h, 1600);
  EXPECT_FALSE(jpeg_dimensions(bytes.data(), 10, &w, &h));
  EXPECT_EQ(decode_reduction(2048, 1600, 224), 4);  // 1600 / 8 = 200 < 224
  EXPECT_EQ(decode_reduction(2048, 1600, 200), 8);
  EXPECT_EQ(decode_reduction(2048, 1600, 512), 2);
  EXPECT_EQ(decode_reduction(2048, 1600, 1024), 1);
  // Reduced decoding is close to a full decode + area resize.
  cv::Mat fast = decode_resized(dir + "/a.jpg", 224);
  ASSERT_EQ(fast.rows, 224);
  ASSERT_EQ(fast.cols, 224);
  cv::Mat full = cv::imread(dir + "/a.jpg", cv::IMREAD_GRAYSCALE), slow;
  cv::resize(full, slow, cv::Size(224, 224), 0, 0, cv::INTER_AREA);
  cv::Mat diff;
  cv::absdiff(fast, slow, diff);
  EXPECT_LT(cv::mean(diff)[0], 3.0);
  // PNG goes through the plain path.
  ASSERT_TRUE(cv::imwrite(dir + "/a.png", img));
  EXPECT_EQ(decode_resized(dir + "/a.png", 100).rows, 100);
  // Errors name the file.
  write_text(dir, "bad.jpg", "\xFF\xD8\xFF garbage");
  try {
    decode_resized(dir + "/bad.jpg", 64);
    ADD_FAILURE() << "expected DataError";
  } catch (const ddp::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jpg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_resized(dir + "/none.jpg", 64), ddp::DataError);
  fs::remove_all(dir);
}

TEST(RanzcrImage, NormalisationAndAugmentation) {
  cv::Mat img(32, 32, CV_8UC1, cv::Scalar(255));
  std::vector<float> out(32 * 32);
  to_input(img, out.data());
  EXPECT_NEAR(out[0], (1.f - kPixelMean) / kPixelStd, 1e-6);
  // The same stream gives the same augmentation; another stream another one.
  cv::Mat ramp(64, 64, CV_8UC1);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) ramp.at<uint8_t>(y, x) = static_cast<uint8_t>(x * 4);
  AugmentOptions aug;
  std::vector<float> a(64 * 64), b(64 * 64), c(64 * 64);
  Rng r1 = Rng::for_stream(1, 2, 3), r2 = Rng::for_stream(1, 2, 3), r3 = Rng::for_stream(1, 2, 4);
  to_input(ramp, a.data(), &aug, &r1);
  to_input(ramp, b.data(), &aug, &r2);
  to_input(ramp, c.data(), &aug, &r3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A small augmentation: the picture stays close to the original.
  std::vector<float> plain(64 * 64);
  to_input(ramp, plain.data());
  double diff = 0;
  for (size_t i = 0; i < plain.size(); ++i) diff += std::abs(plain[i] - a[i]);
  EXPECT_LT(diff / plain.size(), 0.6);
}

TEST(RanzcrCache, StoresOnceReadsBackAndRebuildsDamagedEntries) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-cache");
  auto data = synthetic_dataset();
  const std::string uid = data->records[0].uid, source = data->image_path(0);
  ImageCache cache(dir, 48);
  cv::Mat first = cache.load(uid, source);
  EXPECT_EQ(cache.misses(), 1);
  ASSERT_TRUE(fs::exists(cache.entry_path(uid)));
  EXPECT_EQ(fs::file_size(cache.entry_path(uid)), 48u + 48u * 48u);
  cv::Mat second = cache.load(uid, source);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cv::norm(first, second, cv::NORM_INF), 0.0);
  EXPECT_EQ(cv::norm(first, decode_resized(source, 48), cv::NORM_INF), 0.0);
  // Flip a pixel byte: the checksum catches it, the entry is rebuilt.
  {
    std::fstream f(cache.entry_path(uid), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(48 + 100);
    const char old = static_cast<char>(f.get());
    f.seekp(48 + 100);
    f.put(static_cast<char>(~old));
  }
  cv::Mat third = cache.load(uid, source);
  EXPECT_EQ(cache.rebuilt(), 1);
  EXPECT_EQ(cv::norm(first, third, cv::NORM_INF), 0.0);
  // A truncated entry too.
  fs::resize_file(cache.entry_path(uid), 60);
  cache.load(uid, source);
  EXPECT_EQ(cache.rebuilt(), 2);
  // A changed source (new mtime) makes the entry stale.
  const std::string copy = dir + "/copy.jpg";
  fs::copy_file(source, copy);
  cache.load("copy", copy);
  fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5));
  cache.load("copy", copy);
  EXPECT_EQ(cache.rebuilt(), 3);
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>("123456789"), 9), 0xCBF43926u);  // the standard check value
  EXPECT_THROW(cache.load("none", dir + "/none.jpg"), ddp::DataError);
  fs::remove_all(dir);
}

// Caches users already have were written by the table CRC-32 that zlib's replaced: the fixture
// (tests/ranzcr/fixtures/README.md) is such an entry. It must still be a hit, with its own pixels,
// and a flipped pixel byte must still be caught and rebuilt from the source.
TEST(RanzcrCache, AnEntryWrittenBeforeZlibIsStillValid) {
  const std::string fixtures = std::string(DDP_SOURCE_DIR) + "/tests/ranzcr/fixtures";
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-cache-v1");
  // The entry is valid for a source of this size and mtime (a checkout sets its own mtime).
  const std::string source = dir + "/source.jpg";
  fs::copy_file(fixtures + "/cache_v1_source.jpg", source);
  const struct timespec mtime[2] = {{1700000000, 123456789}, {1700000000, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, source.c_str(), mtime, 0), 0);
  ImageCache cache(dir, 24);
  const std::string entry = cache.entry_path("v1");
  fs::copy_file(fixtures + "/cache_v1_24.u8", entry);
  const std::vector<uint8_t> bytes = ddp::util::read_file_bytes(entry);
  ASSERT_EQ(bytes.size(), 48u + 24u * 24u);
  // The old function's value for these pixels, as stored in the header.
  EXPECT_EQ(crc32(bytes.data() + 48, 24 * 24), 0xFD6232BAu);
  cv::Mat img = cache.load("v1", source);
  EXPECT_EQ(cache.hits(), 1) << "an entry written before zlib's crc32 is rejected";
  EXPECT_EQ(cache.rebuilt(), 0);
  ASSERT_EQ(img.total(), 24u * 24u);
  EXPECT_EQ(std::memcmp(img.data, bytes.data() + 48, 24 * 24), 0) << "the entry's own pixels";
  const int64_t rebuilt = cache.rebuilt();
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(48 + 300);
    f.put(static_cast<char>(~bytes[48 + 300]));
  }
  cache.load("v1", source);
  EXPECT_EQ(cache.rebuilt(), rebuilt + 1) << "a flipped pixel byte passed the checksum";
  fs::remove_all(dir);
}

// ---- loader ---------------------------------------------------------------------------------------

TEST(RanzcrLoader, BatchesMatchDirectDecodingInOrder) {
  auto data = synthetic_dataset();
  std::vector<int64_t> order = {5, 3, 9, 0, 1, 2, 7, 8, 4, 6, 11};
  BatchLoader loader(data, LoaderOptions().batch_size(4).image_size(32).workers(3).prefetch_batches(2));
  auto batches = all_batches(loader, order, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].images.size(0), 3);  // 11 = 4 + 4 + 3
  size_t k = 0;
  for (auto& b : batches) {
    EXPECT_EQ(b.num_valid, b.images.size(0));
    for (int64_t r = 0; r < b.images.size(0); ++r, ++k) {
      ASSERT_EQ(b.indices[static_cast<size_t>(r)], order[k]);
      std::vector<float> expected(32 * 32);
      to_input(decode_resized(data->image_path(order[k]), 32), expected.data());
      auto got = b.images[r].contiguous();
      EXPECT_EQ(std::vector<float>(got.data_ptr<float>(), got.data_ptr<float>() + 32 * 32), expected) << k;
      for (int c = 0; c < kNumLabels; ++c) {
        EXPECT_EQ(b.targets[r][c].item<float>(), data->records[static_cast<size_t>(order[k])].labels[c]);
      }
    }
  }
  // drop_last
  BatchLoader dropping(data, LoaderOptions().batch_size(4).image_size(32).workers(2).drop_last(true));
  EXPECT_EQ(all_batches(dropping, order, 0).size(), 2u);
}

TEST(RanzcrLoader, AugmentationDoesNotDependOnThreadsOrCache) {
  auto data = synthetic_dataset();
  const std::string cache_dir = ddp::testing::make_temp_dir("ranzcr-loader-cache");
  auto options = LoaderOptions().batch_size(5).image_size(40).augment(true).seed(3);
  BatchLoader inline_loader(data, LoaderOptions(options).workers(0));
  BatchLoader pooled(data, LoaderOptions(options).workers(4));
  BatchLoader cached(data, LoaderOptions(options).workers(2).cache_dir(cache_dir));
  for (uint64_t epoch : {0, 1}) {
    auto a = all_batches(inline_loader, iota(17), epoch);
    auto b = all_batches(pooled, iota(17), epoch);
    auto c = all_batches(cached, iota(17), epoch);  // epoch 0 fills the cache, epoch 1 reads it
    ASSERT_EQ(a.size(), 4u);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(at::equal(a[i].images, b[i].images)) << "batch " << i;
      EXPECT_TRUE(at::equal(a[i].images, c[i].images)) << "batch " << i;
    }
  }
  EXPECT_EQ(cached.cache()->misses(), 17);
  EXPECT_EQ(cached.cache()->hits(), 17);
  // Different epochs augment differently.
  auto e0 = all_batches(pooled, iota(5), 0), e1 = all_batches(pooled, iota(5), 1);
  EXPECT_FALSE(at::equal(e0[0].images, e1[0].images));
  fs::remove_all(cache_dir);
}

TEST(RanzcrLoader, RestartingAnEpochMidwayAndManyEpochs) {
  auto data = synthetic_dataset();
  BatchLoader loader(data, LoaderOptions().batch_size(3).image_size(32).workers(3).prefetch_batches(3));
  for (int round = 0; round < 5; ++round) {
    loader.start_epoch(iota(40), static_cast<uint64_t>(round));
    Batch b;
    ASSERT_TRUE(loader.next(&b));  // abandon the rest
  }
  auto batches = all_batches(loader, iota(40), 9);
  EXPECT_EQ(batches.size(), 14u);
  EXPECT_EQ(batches.back().indices.back(), 39);
  EXPECT_THROW(loader.start_epoch({0, 40}, 0), ddp::ConfigError);
  EXPECT_THROW(BatchLoader(data, LoaderOptions().batch_size(0)), ddp::ConfigError);
}

TEST(RanzcrLoader, MissingAndUndecodableImages) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-bad");
  fs::create_directories(dir + "/train");
  auto data = synthetic_dataset();
  std::vector<Record> records(data->records.begin(), data->records.begin() + 6);
  for (auto& r : records) fs::copy_file(synthetic_dir() + "/train/" + r.file_name, dir + "/train/" + r.file_name);
  fs::remove(dir + "/train/" + records[2].file_name);                // missing
  write_text(dir + "/train", records[4].file_name, "not a jpeg");    // undecodable
  {
    Dataset d(records, dir + "/train");
    try {
      check_images_exist(d, false);
      ADD_FAILURE() << "expected DataError";
    } catch (const ddp::DataError& e) {
      EXPECT_NE(std::string(e.what()).find(records[2].uid), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--skip-bad-images"), std::string::npos) << e.what();
    }
    EXPECT_EQ(check_images_exist(d, true), 1);
    EXPECT_EQ(d.records.size(), 5u);
  }
  Dataset d(records, dir + "/train");
  check_images_exist(d, true);
  auto shared = std::make_shared<Dataset>(d);
  {
    BatchLoader strict(shared, LoaderOptions().batch_size(5).image_size(32).workers(2));
    strict.start_epoch(iota(5), 0);
    Batch b;
    try {
      strict.next(&b);
      ADD_FAILURE() << "expected DataError";
    } catch (const ddp::DataError& e) {
      EXPECT_NE(std::string(e.what()).find(records[4].uid), std::string::npos) << e.what();
    }
  }
  BatchLoader lenient(shared, LoaderOptions().batch_size(5).image_size(32).workers(2).skip_bad_images(true));
  auto batches = all_batches(lenient, iota(5), 0);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].num_valid, 4);
  EXPECT_EQ(batches[0].valid, (std::vector<uint8_t>{1, 1, 1, 0, 1}));  // records 0,1,3,4,5: the 4th is bad
  EXPECT_EQ(lenient.bad_images(), 1);
  fs::remove_all(dir);
}

TEST(RanzcrSynthetic, WritesTheRealLayout) {
  auto records = read_train_csv(synthetic_dir() + "/train.csv");
  EXPECT_EQ(records.size(), 40u);
  std::set<std::string> patients;
  for (auto& r : records) {
    patients.insert(r.patient_id);
    EXPECT_TRUE(fs::exists(synthetic_dir() + "/train/" + r.uid + ".jpg")) << r.uid;
  }
  EXPECT_EQ(patients.size(), 12u);
  for (int c = 0; c < kNumLabels; ++c) {
    int pos = 0;
    for (auto& r : records) pos += r.labels[c] == 1.f;
    EXPECT_GT(pos, 0) << label_columns()[c];
    EXPECT_LT(pos, 40) << label_columns()[c];
  }
  auto test = list_test_images(synthetic_dir() + "/test");
  EXPECT_EQ(test.size(), 6u);
  EXPECT_EQ(read_train_csv(synthetic_dir() + "/test_labels.csv").size(), 6u);
  cv::Mat img = cv::imread(synthetic_dir() + "/train/" + records[0].file_name, cv::IMREAD_UNCHANGED);
  EXPECT_EQ(img.channels(), 1);
  EXPECT_EQ(img.rows, 64);
  // The same seed writes the same pixels.
  const std::string again = ddp::testing::make_temp_dir("ranzcr-synth2");
  write_synthetic_dataset(SyntheticOptions().dir(again).images(40).size(64).patients(12).seed(7).threads(1));
  EXPECT_EQ(read_train_csv(again + "/train.csv")[5].uid, records[5].uid);
  cv::Mat other = cv::imread(again + "/train/" + records[0].file_name, cv::IMREAD_UNCHANGED);
  EXPECT_EQ(cv::norm(img, other, cv::NORM_INF), 0.0);
  fs::remove_all(again);
  EXPECT_THROW(write_synthetic_dataset(SyntheticOptions().dir(again).images(0)), ddp::ConfigError);
  EXPECT_THROW(list_test_images(again + "/none"), ddp::DataError);
}

// A cache entry that cannot be written (here a folder sits where it would be renamed to, which
// stops root as well) is counted and logged; the decoded image is returned, not an error.
TEST(RanzcrCache, AWriteFailureReturnsTheDecodedImage) {
  const std::string dir = ddp::testing::make_temp_dir("ranzcr-cache-ro");
  auto data = synthetic_dataset();
  const std::string uid = data->records[0].uid, source = data->image_path(0);
  ImageCache cache(dir, 48);
  fs::create_directories(cache.entry_path(uid));
  cv::Mat img;
  ASSERT_NO_THROW(img = cache.load(uid, source));
  EXPECT_EQ(cache.write_failures(), 1);
  EXPECT_EQ(cv::norm(img, decode_resized(source, 48), cv::NORM_INF), 0.0);
  fs::remove_all(dir);
}

// ddp's own marker walk: dimensions, a cut-off scan, a header claiming too many pixels, and the
// bounds of every length it reads (each prefix of a valid file is walked without error).
TEST(RanzcrImage, JpegHeaderWalkRefusesTruncatedAndOversizedImages) {
  auto data = synthetic_dataset();
  const std::vector<uint8_t> bytes = ddp::util::read_file_bytes(data->image_path(0));
  JpegInfo info = read_jpeg_header(bytes.data(), bytes.size());
  EXPECT_TRUE(info.is_jpeg);
  EXPECT_GT(info.width, 0);
  EXPECT_GT(info.scan_offset, 0u);
  EXPECT_TRUE(info.has_end);
  EXPECT_NO_THROW(check_jpeg(info, "'ok.jpg'"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    JpegInfo cut = read_jpeg_header(bytes.data(), n);
    if (cut.scan_offset) {
      EXPECT_THROW(check_jpeg(cut, "'cut.jpg'"), ddp::DataError) << n;
    }
  }
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() * 2 / 3);
  EXPECT_THROW(
      {
        try {
          decode_resized(truncated, 32, "'t.jpg'");
        } catch (const ddp::DataError& e) {
          EXPECT_NE(std::string(e.what()).find("'t.jpg' is truncated"), std::string::npos) << e.what();
          throw;
        }
      },
      ddp::DataError);
  std::vector<uint8_t> huge = bytes;
  for (size_t i = 0; i + 1 < huge.size(); ++i) {
    if (huge[i] == 0xFF && huge[i + 1] >= 0xC0 && huge[i + 1] <= 0xC2) {
      for (int k = 5; k < 9; ++k) huge[i + k] = 0xFF;
      break;
    }
  }
  EXPECT_THROW(decode_resized(huge, 32, "'huge.jpg'"), ddp::DataError);
}

TEST(RanzcrRecords, OpenQuoteIsReported) {
  bool open = false;
  EXPECT_EQ(split_csv_line("a,\"b,c", &open).size(), 2u);
  EXPECT_TRUE(open);
  split_csv_line("a,\"b,\"\"c\"", &open);
  EXPECT_FALSE(open);
}

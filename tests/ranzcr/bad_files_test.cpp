// train_ranzcr given bad data files, and a cache folder it cannot write: real processes on a
// folder made by the real generator. A bad file is exit 2 naming it, never a signal and never a
// silently wrong image; a failed cache write is only a warning. (No LibTorch headers: quick to build.)
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/multiprocess.h"
#include "support/subprocess.h"

using ddp::testing::Subprocess;
namespace fs = std::filesystem;

namespace {

const std::string kTrainer = std::string(DDP_BUILD_DIR) + "/apps/train_ranzcr/train_ranzcr";
const std::string kGenerator = std::string(DDP_BUILD_DIR) + "/tools/make_ranzcr_synthetic/make_ranzcr_synthetic";

// 16 images of 64x64 in a fresh folder per test (each test damages its own copy).
struct Folder {
  Folder() : path(ddp::testing::make_temp_dir("ranzcr-hostile")) {
    Subprocess p({kGenerator, "--out", path, "-n", "16", "--size", "64", "--threads", "1", "--seed", "4"});
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 0) << p.output();
    for (const auto& e : fs::directory_iterator(path + "/train")) images.push_back(e.path().string());
    std::sort(images.begin(), images.end());
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
  std::vector<std::string> images;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

struct TrainerRun {
  int status;
  std::string output;
};

TrainerRun train(const std::string& data_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {kTrainer, "--threads", "1", "--progress", "plain", "--data-dir", data_dir,
                                   "--image-size", "32", "--epochs", "1", "--batch-size", "8", "--workers", "1",
                                   "--model-dir", data_dir + "/model"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Subprocess p(argv, {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", std::to_string(ddp::testing::free_port())}, {"LOCAL_RANK", ddp::testing::kUnset},
                      {"CUDA_VISIBLE_DEVICES", ""}});
  int status = p.wait(std::chrono::seconds(120));
  if (status == -1) p.kill(SIGKILL);
  return {status, p.output()};
}

size_t count(const std::string& text, const std::string& fragment) {
  size_t n = 0;
  for (size_t at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + 1)) ++n;
  return n;
}

}  // namespace

// The defect: a cache write that fails after a good decode counted the image as bad, so with
// --skip-bad-images every image became zeros. Replayed as root can (permissions do not stop root):
// a folder sits where each entry would be renamed to, so every write fails.
TEST(TrainRanzcrHostileFiles, UnwritableCacheIsAWarningAndTheDecodedImagesAreUsed) {
  Folder f;
  const std::string cache = f.path + "/cache";
  for (const auto& image : f.images)
    fs::create_directories(cache + "/32/" + fs::path(image).stem().string() + ".u8");
  TrainerRun r = train(f.path, {"--cache-dir", cache, "--skip-bad-images"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, "skipping image"), 0u) << r.output;
  EXPECT_GE(count(r.output, "image cache: cannot write"), 1u) << r.output;
  EXPECT_LE(count(r.output, "image cache: cannot write"), 4u) << "rate limited:\n" << r.output;
  EXPECT_NE(r.output.find("using the decoded image"), std::string::npos) << r.output;
}

// libjpeg decodes a cut-off JPEG with grey for the missing part and only a warning: that image
// would be trained on silently. ddp's own marker walk refuses it, naming the file.
TEST(TrainRanzcrHostileFiles, TruncatedJpegIsExit2NamingIt) {
  Folder f;
  const std::string image = f.images[3];
  const std::string bytes = read_all(image);
  write(image, bytes.substr(0, bytes.size() * 2 / 3));
  TrainerRun r = train(f.path);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(image + "' is truncated"), std::string::npos) << r.output;
  // With --skip-bad-images it is the one image skipped.
  TrainerRun skipped = train(f.path, {"--skip-bad-images"});
  EXPECT_EQ(skipped.status, 0) << skipped.output;
  EXPECT_EQ(count(skipped.output, "skipping image"), 1u) << skipped.output;
}

// A header claiming 65535 x 65535 pixels is refused before a decoder allocates for it.
TEST(TrainRanzcrHostileFiles, JpegClaimingTooManyPixelsIsExit2) {
  Folder f;
  std::string bytes = read_all(f.images[0]);
  const size_t sof = bytes.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  bytes.replace(sof + 5, 4, "\xff\xff\xff\xff");
  write(f.images[0], bytes);
  TrainerRun r = train(f.path);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("claims 65535 x 65535 pixels"), std::string::npos) << r.output;
}

// Garbage bytes as train.csv: exit 2, the file named and the bytes escaped (no raw binary in logs).
// An unterminated quote is refused rather than read as one long field.
TEST(TrainRanzcrHostileFiles, GarbageAndOpenQuotesInTrainCsvAreExit2) {
  Folder f;
  const std::string csv = f.path + "/train.csv";
  const std::string good = read_all(csv);
  std::string garbage;
  for (int i = 0; i < 128; ++i) garbage += static_cast<char>(255 - i);  // no quote, comma or newline
  write(csv, garbage);
  TrainerRun r = train(f.path);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(csv + "': unknown column '\\xff\\xfe\\xfd"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\xfe'), std::string::npos) << "raw bytes in the log";

  const size_t second_line = good.find('\n') + 1;
  write(csv, good.substr(0, second_line) + "\"" + good.substr(second_line));
  r = train(f.path);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(csv + "' line 2: a quoted field is not closed"), std::string::npos) << r.output;
}

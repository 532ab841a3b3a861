// The final model.pt (trainer::save_model): written through util::write_file_atomically (temporary
// file, fsync, rename, fsync of the folder), so the name holds either the previous file or the
// whole new one. What a test can see of that: the file is complete and no temporary is left, and a
// write that fails half-way (the file-size limit, as a full disk would) is a DataError naming
// model.pt that leaves the previous model.pt byte for byte as it was.
#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "models/state_dict.h"
#include "trainer/step_end.h"

namespace fs = std::filesystem;

namespace {

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// RLIMIT_FSIZE lowered for this process while it lives (writes past it fail with EFBIG instead of
// raising SIGXFSZ, which is ignored meanwhile).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lower = saved_;
    lower.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lower);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  sighandler_t old_handler_;
};

class SaveModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ddp-save-model-" + std::to_string(::getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

}  // namespace

TEST_F(SaveModelTest, CompleteFileAndNoTemporaryLeft) {
  torch::manual_seed(3);
  torch::nn::Linear net(64, 32);
  const std::string path = ddp::trainer::save_model(*net, (dir / "out").string());  // creates the folder
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"model.pt"});
  auto loaded = ddp::models::read_state_dict(path);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_TRUE(loaded.at("weight").equal(net->weight));
  EXPECT_TRUE(loaded.at("bias").equal(net->bias));
}

TEST_F(SaveModelTest, FailedWriteLeavesThePreviousModelIntact) {
  torch::manual_seed(4);
  torch::nn::Linear small(8, 4);
  const std::string path = ddp::trainer::save_model(*small, dir.string());
  const std::string before = file_bytes(path);
  ASSERT_FALSE(before.empty());

  torch::nn::Linear big(512, 512);  // ~1 MiB: cannot be written under the limit below
  std::string error;
  {
    FileSizeLimit limit(before.size() + 64 * 1024);
    try {
      ddp::trainer::save_model(*big, dir.string());
    } catch (const ddp::DataError& e) {
      error = e.what();
    }
  }
  EXPECT_NE(error.find(path), std::string::npos) << "the error names model.pt: " << error;
  EXPECT_NE(error.find("File too large"), std::string::npos) << "and the reason: " << error;
  EXPECT_EQ(file_bytes(path), before) << "the previous model.pt is untouched";
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"model.pt"}) << "no temporary file is left";
}

TEST_F(SaveModelTest, AFolderThatIsAFileIsADataError) {
  fs::create_directories(dir);
  std::ofstream(dir / "taken") << "x";
  torch::nn::Linear net(2, 2);
  EXPECT_THROW(ddp::trainer::save_model(*net, (dir / "taken").string()), ddp::DataError);
}

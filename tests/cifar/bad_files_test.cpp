// train_cifar10 given hostile batch files: each must end with exit 2 and an error naming the file,
// never a signal. Real processes; the files are written into a folder made by the real generator.
// (No LibTorch headers here, so this test compiles in seconds.)
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/multiprocess.h"
#include "support/subprocess.h"

using ddp::testing::Subprocess;
namespace fs = std::filesystem;

namespace {

struct Folder {
  Folder() : path(ddp::testing::make_temp_dir("cifar-hostile")) {
    Subprocess p({DDP_MAKE_CIFAR10_SYNTHETIC, "--out", path, "--train", "50", "--test", "20", "--seed", "3", "--layout", "py"});
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 0) << p.output();
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string batch(const std::string& name) const { return path + "/cifar-10-batches-py/" + name; }
  std::string path;
};

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

struct Run {
  int status;
  std::string output;
};

Run train(const std::string& data_dir) {
  const int port = ddp::testing::free_port();
  Subprocess p({DDP_TRAIN_CIFAR10, "--data-dir", data_dir, "--epochs", "1", "--max-steps", "1"},
               {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)},
                {"LOCAL_RANK", ddp::testing::kUnset}, {"OMP_NUM_THREADS", "1"}});
  int status = p.wait(std::chrono::seconds(120));
  if (status == -1) p.kill(SIGKILL);
  return {status, p.output()};
}

void expect_exit_2_naming(const Run& r, const std::string& file, const std::string& what) {
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(file), std::string::npos) << "expected '" << file << "' in:\n" << r.output;
  EXPECT_NE(r.output.find(what), std::string::npos) << "expected '" << what << "' in:\n" << r.output;
}

// A numpy array pickled the Python 2 way: _reconstruct(ndarray, (0,), b'b') then BUILD with
// (1, shape, dtype(descr), False, data); shape dimensions as 8-byte LONG1 so any int64 fits.
std::string pickled_array(const std::vector<int64_t>& shape, const std::string& descr, const std::string& data) {
  auto le32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  std::string s = "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + std::string("K\0\x85" "C\x01" "b" "\x87" "R", 8);
  s += "(K\x01(";
  for (int64_t d : shape) s += std::string("\x8a\x08", 2) + std::string(reinterpret_cast<const char*>(&d), 8);
  s += "tcnumpy\ndtype\nX" + le32(static_cast<uint32_t>(descr.size())) + descr + std::string("K\0K\x01\x87R", 6);
  s += "(K\x03X" + le32(1) + "<NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK" + std::string("\0tb", 3);
  s += "\x89" "B" + le32(static_cast<uint32_t>(data.size())) + data + "tb";
  return s;
}

std::string dict_of(const std::string& data, const std::string& labels) {
  return std::string("\x80\x02}(X\x04\0\0\0data", 13) + data + std::string("X\x06\0\0\0labels", 11) + labels + "u.";
}

}  // namespace

// The issue's probe: `\x80\x02` + `]` x 1,000,000 + `a` x 999,999 + `.` used to end in SIGSEGV
// (exit 139: the nested list tree was freed recursively).
TEST(TrainCifar10HostileFiles, MillionDeepNestedListIsExit2NamingTheFile) {
  Folder f;
  write(f.batch("data_batch_1"), "\x80\x02" + std::string(1000000, ']') + std::string(999999, 'a') + ".");
  expect_exit_2_naming(train(f.path), "data_batch_1", "the pickle holds a list, expected a dict");
}

// More values than any CIFAR-10 batch holds is refused while parsing, not after.
TEST(TrainCifar10HostileFiles, TooManyValuesIsExit2) {
  Folder f;
  write(f.batch("data_batch_2"), "\x80\x02" + std::string(1100000, 'N') + ".");
  expect_exit_2_naming(train(f.path), "data_batch_2", "more than 1048576 values");
}

// A shape of (2^61 + 1, 3072) needs 3072 bytes modulo 2^64: the product itself must be refused.
TEST(TrainCifar10HostileFiles, DataShapeWhoseByteCountWrapsIsExit2) {
  Folder f;
  const int64_t rows = (int64_t{1} << 61) + 1;
  write(f.batch("data_batch_3"), dict_of(pickled_array({rows, 3072}, "u1", std::string(3072, '\0')), std::string("]K\0a", 4)));
  expect_exit_2_naming(train(f.path), "data_batch_3", "'data' shape (2305843009213693953, 3072) of 2305843009213693953 x 3072 bytes is too large");
}

// Same for a labels array of int64: (2^61 + 1) x 8 bytes wraps to 8, and the old loop then read
// past the 8 real bytes (SIGSEGV).
TEST(TrainCifar10HostileFiles, LabelsShapeWhoseByteCountWrapsIsExit2) {
  Folder f;
  const int64_t rows = (int64_t{1} << 61) + 1;
  write(f.batch("test_batch"),
        dict_of(pickled_array({1, 3072}, "u1", std::string(3072, '\0')), pickled_array({rows}, "i8", std::string(8, '\0'))));
  expect_exit_2_naming(train(f.path), "test_batch", "labels array (2305843009213693953,) of 2305843009213693953 x 8 bytes is too large");
}

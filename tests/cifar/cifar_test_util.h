#pragma once
// Shared helpers for the CIFAR tests: a cached synthetic dataset and error-message checks.

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cifar_test {

/// A temporary directory removed (recursively) when this goes out of scope.
struct TempDir {
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

/// A synthetic CIFAR-10 (both layouts) written once per test process: 500 train, 200 test images.
const std::string& small_dataset();

/// Copies a folder tree into `to` so a test can damage its own copy.
void copy_tree(const std::string& from, const std::string& to);

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

/// Runs `fn`, expects a ddp::DataError whose message contains every fragment.
template <typename Fn>
void expect_data_error(Fn fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected ddp::DataError";
  } catch (const ddp::DataError& e) {
    const std::string what = e.what();
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << what << "' lacks '" << f << "'";
    EXPECT_EQ(e.exit_code(), 2);
  }
}

}  // namespace cifar_test

#include "cifar_test_util.h"

#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "data/cifar/cifar_synthetic.h"
#include "support/multiprocess.h"
#include "support/subprocess.h"

namespace cifar_test {

TempDir::TempDir(const std::string& prefix) : path(ddp::testing::make_temp_dir(prefix)) {}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

const std::string& small_dataset() {
  static TempDir dir("cifar-small");
  static const bool written = [] {
    ddp::data::cifar::write_synthetic_cifar10(ddp::data::cifar::SyntheticCifarOptions().out_dir(dir.path).train(500).test(200).seed(7));
    return true;
  }();
  (void)written;
  return dir.path;
}

void copy_tree(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cifar_test

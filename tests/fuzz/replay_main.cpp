// Replays fuzz corpora without libFuzzer (any compiler): calls LLVMFuzzerTestOneInput once per file
// of every folder or file named on the command line. A crash or an unexpected exception fails the
// run, so CI checks every corpus file (crashers found earlier included) on each build.
//   fuzz_replay_idx tests/fuzz/corpus/idx
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replay_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0, errors = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st{};
    if (::stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "%s: not found\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      errors += replay_file(argv[i]);
      ++files;
      continue;
    }
    DIR* dir = ::opendir(argv[i]);
    while (dirent* e = dir ? ::readdir(dir) : nullptr) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      errors += replay_file(std::string(argv[i]) + "/" + name);
      ++files;
    }
    if (dir) ::closedir(dir);
  }
  std::printf("replayed %d files, %d unreadable\n", files, errors);
  return files > 0 && errors == 0 ? 0 : 1;
}

#include "trainer/blas.h"

#include <ATen/Parallel.h>
#include <ddp/logging.h>
#include <dlfcn.h>

#include <climits>
#include <cstdlib>

namespace ddp::trainer {
namespace {

// Vendor query functions, looked up at run time so nothing here links against a BLAS.
template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

// The file that holds `symbol`, symlinks followed; "" when the symbol is not loaded.
std::string file_of(void* symbol) {
  Dl_info where{};
  if (!symbol || !::dladdr(symbol, &where) || !where.dli_fname) return "";
  char buf[PATH_MAX];
  return ::realpath(where.dli_fname, buf) ? std::string(buf) : std::string(where.dli_fname);
}

}  // namespace

std::string BlasInfo::describe() const {
  std::string s = vendor;
  if (!version.empty()) s += " (" + version + ")";
  std::string details = threading;
  if (!library.empty()) details += (details.empty() ? "" : ", ") + library;
  if (!engine.empty() && engine != library) details += " -> " + engine;
  if (!details.empty()) s += " [" + details + "]";
  return s;
}

BlasInfo blas_in_use() {
  BlasInfo info;
  info.library = file_of(::dlsym(RTLD_DEFAULT, "dgemm_"));
  if (auto config = lookup<char* (*)()>("openblas_get_config")) {
    info.vendor = "OpenBLAS";
    info.engine = file_of(reinterpret_cast<void*>(config));
    info.version = config();
    if (auto parallel = lookup<int (*)()>("openblas_get_parallel")) {
      const int p = parallel();
      info.threading = p == 2 ? "openmp" : p == 1 ? "pthread" : "serial";
    }
  } else if (auto mkl = lookup<void (*)(char*, int)>("mkl_get_version_string")) {
    char buf[256] = {0};
    mkl(buf, sizeof buf - 1);
    info.vendor = "MKL";
    info.version = buf;
  } else if (auto blis = lookup<const char* (*)()>("bli_info_get_version_str")) {
    info.vendor = "BLIS";
    info.version = blis();
  } else if (info.library.find("/blas/libblas") != std::string::npos) {
    // Debian's netlib reference BLAS lives in .../blas/ and has no query function of its own.
    info.vendor = "reference BLAS";
    info.slow = true;
  } else {
    info.vendor = info.library.empty() ? "none found (LibTorch may carry its own)" : "unknown";
  }
  return info;
}

void warn_if_slow(const BlasInfo& blas) {
  if (!blas.slow) return;
  DDP_LOG(WARN) << "LibTorch is calling the reference BLAS: matmuls run 15-20x slower than with OpenBLAS "
                   "(Debian: apt-get install libopenblas0-openmp, or bash scripts/select-blas.sh)";
}

void set_intra_op_threads(int n) {
  at::set_num_threads(n);
  if (auto set = lookup<void (*)(int)>("openblas_set_num_threads")) set(n);
}

}  // namespace ddp::trainer

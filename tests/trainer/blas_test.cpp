// The BLAS the trainers name at startup is the one the process really calls, and the thread budget
// reaches it.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <climits>
#include <string>
#include <thread>

#include "support/ci.h"
#include "trainer/blas.h"

namespace {

// The file the alternatives system points libblas.so.3 at, found without asking our code.
std::string selected_libblas() {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libblas.so.3", "/usr/lib/aarch64-linux-gnu/libblas.so.3"}) {
    char buf[PATH_MAX];
    if (::realpath(p, buf)) return buf;
  }
  return "";
}

}  // namespace

TEST(Blas, NamesTheLibraryTheAlternativesSystemSelected) {
  const ddp::trainer::BlasInfo info = ddp::trainer::blas_in_use();
  const std::string selected = selected_libblas();
  if (selected.empty()) DDP_SKIP_OR_FAIL_IN_CI("no libblas.so.3 on this machine");
  EXPECT_EQ(info.library, selected) << info.describe();
  if (selected.find("/openblas-") != std::string::npos) {
    EXPECT_EQ(info.vendor, "OpenBLAS");
    EXPECT_NE(info.version.find("OpenBLAS"), std::string::npos) << info.version;
    // The engine's folder names the variant that really runs (openblas-openmp/ -> "openmp").
    EXPECT_NE(info.engine.find("/openblas-" + info.threading + "/"), std::string::npos) << info.describe();
    EXPECT_FALSE(info.slow);
  } else if (selected.find("/blas/") != std::string::npos) {
    EXPECT_EQ(info.vendor, "reference BLAS");
    EXPECT_TRUE(info.slow);
  }
  EXPECT_NE(info.describe().find(info.library), std::string::npos);
}

// scripts/install-deps.sh selects OpenBLAS's OpenMP variant; CI runs after it.
// Both the front (libblas.so.3) and the engine (libopenblas.so.0) must be the OpenMP variant: with
// only the first switched, the pthread engine runs behind an openmp-named front.
TEST(Blas, InstallDepsSelectedOpenBlasOpenMp) {
  const ddp::trainer::BlasInfo info = ddp::trainer::blas_in_use();
  if (info.vendor != "OpenBLAS" || info.threading != "openmp" || info.library.find("/openblas-openmp/") == std::string::npos)
    DDP_SKIP_OR_FAIL_IN_CI("the BLAS in use is " + info.describe() + ", not OpenBLAS (openmp); run scripts/select-blas.sh");
}

TEST(Blas, TheThreadBudgetBoundsOpenBlasToo) {
  auto get = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get) GTEST_SKIP() << "the BLAS in use is not OpenBLAS";
  ddp::trainer::set_intra_op_threads(1);
  EXPECT_EQ(get(), 1);
  if (std::thread::hardware_concurrency() >= 2) {  // OpenBLAS caps the count at the cores it found
    ddp::trainer::set_intra_op_threads(2);
    EXPECT_EQ(get(), 2);
  }
  ddp::trainer::set_intra_op_threads(1);
  EXPECT_EQ(get(), 1);
}

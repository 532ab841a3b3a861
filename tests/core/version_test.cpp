// ddp/version.h (generated from the project version) against libddp's ddp::version(), and the
// --version line every binary prints.
#include <ddp/process_group_nccl.h>
#include <ddp/version.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <string>

#include "util/version_banner.h"

TEST(Version, HeaderMatchesTheProjectVersion) {
  // DDP_TEST_PROJECT_VERSION is CMake's PROJECT_VERSION, passed by tests/core/CMakeLists.txt.
  EXPECT_STREQ(DDP_VERSION_STRING, DDP_TEST_PROJECT_VERSION);
  EXPECT_EQ(std::to_string(DDP_VERSION_MAJOR) + "." + std::to_string(DDP_VERSION_MINOR) + "." +
                std::to_string(DDP_VERSION_PATCH),
            DDP_VERSION_STRING);
}

TEST(Version, LibraryReportsTheHeaderVersion) { EXPECT_STREQ(ddp::version(), DDP_VERSION_STRING); }

TEST(Version, WithNcclSaysWhetherTheNcclGroupIsBuiltIn) {
  // nccl_version() is "" exactly when libddp was built without NCCL (it needs no GPU).
  EXPECT_EQ(DDP_WITH_NCCL, ddp::nccl_version().empty() ? 0 : 1) << "nccl_version() = '" << ddp::nccl_version() << "'";
}

TEST(Version, BannerNamesProgramLibTorchAndNccl) {
  const std::string expected = std::string("some_tool ") + DDP_VERSION_STRING + " (LibTorch " + TORCH_VERSION +
                               ", NCCL " + (DDP_WITH_NCCL ? "yes" : "no") + ")";
  EXPECT_EQ(ddp::util::version_banner("some_tool"), expected);
}

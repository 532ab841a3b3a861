// What the NCCL process group does where it cannot run: on this CPU-only machine with Debian's CPU
// LibTorch it must say why, refuse with ConfigError, and still be linked against libnccl. On a GPU
// machine with CUDA LibTorch the same binary checks the argument validation instead.
#include "memory_store.h"

#include <ddp/errors.h>
#include <ddp/process_group_nccl.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <gtest/gtest.h>
#include <link.h>

#include <regex>
#include <string>

namespace {

bool libtorch_has_cuda() { return c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA); }

int loaded_library_count(const std::string& name_part) {
  struct Ctx {
    std::string part;
    int count = 0;
  } ctx{name_part};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Ctx*>(data);
        if (info->dlpi_name && std::string(info->dlpi_name).find(c->part) != std::string::npos) ++c->count;
        return 0;
      },
      &ctx);
  return ctx.count;
}

TEST(NcclBuild, LinksTheNcclAndCudaRuntimes) {
#if DDP_TEST_HAVE_NCCL
  // Runs without a GPU: ncclGetVersion needs none. The library must be loaded in this process.
  std::string version = ddp::nccl_version();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)"))) << "nccl_version() = '" << version << "'";
  EXPECT_GE(loaded_library_count("libnccl.so"), 1) << "libnccl is not loaded: libddp is not linked against it";
  EXPECT_GE(loaded_library_count("libcudart.so"), 1) << "libcudart is not loaded";
#else
  EXPECT_EQ(ddp::nccl_version(), "");
  EXPECT_NE(ddp::nccl_unavailable_reason().find("built without NCCL"), std::string::npos);
#endif
}

TEST(NcclAvailability, ReasonIsEmptyExactlyWhenAvailable) {
  const std::string reason = ddp::nccl_unavailable_reason();
  EXPECT_EQ(ddp::nccl_available(), reason.empty()) << reason;
}

TEST(NcclAvailability, CpuLibTorchSaysLibTorchHasNoCuda) {
#if !DDP_TEST_HAVE_NCCL
  GTEST_SKIP() << "ddp built without NCCL: " << ddp::nccl_unavailable_reason();
#endif
  if (libtorch_has_cuda()) GTEST_SKIP() << "this LibTorch has CUDA";
  EXPECT_FALSE(ddp::nccl_available());
  EXPECT_NE(ddp::nccl_unavailable_reason().find("LibTorch has no CUDA"), std::string::npos)
      << ddp::nccl_unavailable_reason();
}

TEST(NcclAvailability, MakeGroupThrowsConfigErrorNamingTheReason) {
  if (ddp::nccl_available()) GTEST_SKIP() << "NCCL is available here; the GPU tests cover creation";
  auto store = std::make_shared<ddp::testing::MemoryStore>();
  try {
    ddp::make_nccl_process_group(store, 0, 1, 0);
    FAIL() << "make_nccl_process_group succeeded without NCCL being available";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(ddp::nccl_unavailable_reason()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gloo"), std::string::npos) << "should suggest gloo: " << e.what();
    EXPECT_EQ(e.exit_code(), ddp::kExitConfig);
  }
  // Nothing was published: the check comes before any store traffic.
  EXPECT_EQ(store->num_keys(), 0);
}

TEST(NcclArguments, BadArgumentsAreConfigErrors) {
  if (!ddp::nccl_available()) GTEST_SKIP() << "needs a GPU: " << ddp::nccl_unavailable_reason();
  auto store = std::make_shared<ddp::testing::MemoryStore>();
  EXPECT_THROW(ddp::make_nccl_process_group(nullptr, 0, 1, 0), ddp::ConfigError);
  EXPECT_THROW(ddp::make_nccl_process_group(store, 1, 1, 0), ddp::ConfigError);
  EXPECT_THROW(ddp::make_nccl_process_group(store, 0, 1, 4096), ddp::ConfigError);
  ddp::NcclOptions zero;
  zero.timeout(std::chrono::milliseconds(0));
  EXPECT_THROW(ddp::make_nccl_process_group(store, 0, 1, 0, zero), ddp::ConfigError);
}

}  // namespace

#if DDP_TEST_HAVE_INIT
#include <ddp/init.h>
#include <ddp/world_info.h>

#include "support/multiprocess.h"

namespace {

ddp::InitOptions single_process(const std::string& backend) {
  ddp::InitOptions options;
  options.backend(backend);
  ddp::WorldInfo world;
  world.master_port = ddp::testing::free_port();
  options.world(world);
  options.store_connect_timeout(std::chrono::seconds(10));
  return options;
}

TEST(NcclInit, BackendNcclWithoutNcclIsAConfigErrorNamingWhy) {
  if (ddp::nccl_available()) GTEST_SKIP() << "NCCL is available here";
  try {
    ddp::init_process_group(single_process("nccl"));
    FAIL() << "init_process_group(backend nccl) succeeded without NCCL";
  } catch (const ddp::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(ddp::nccl_unavailable_reason()), std::string::npos) << e.what();
  }
}

TEST(NcclInit, DefaultDeviceFallsBackToCpuSayingWhy) {
  if (ddp::nccl_available()) GTEST_SKIP() << "a CUDA device is usable here";
  EXPECT_TRUE(ddp::default_device().is_cpu());
  EXPECT_FALSE(ddp::cpu_fallback_reason().empty());
}

}  // namespace
#endif

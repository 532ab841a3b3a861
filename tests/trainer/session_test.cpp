// One device choice for every trainer (src/trainer/session.h): cpu, auto and cuda with and
// without CUDA, and --backend nccl on a CPU device.
#include <ddp/errors.h>
#include <ddp/init.h>
#include <gtest/gtest.h>

#include <string>

#include "trainer/session.h"

using ddp::trainer::choose_device;
using ddp::trainer::RuntimeOptions;

namespace {

std::string error_of(const RuntimeOptions& o) {
  try {
    choose_device(o);
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

}  // namespace

TEST(DeviceChoice, CpuIsTheCpuWhateverTheMachine) {
  auto c = choose_device(RuntimeOptions().device("cpu").backend("gloo"));
  EXPECT_TRUE(c.device.is_cpu());
  EXPECT_EQ(c.why, "--device cpu");
}

TEST(DeviceChoice, AutoIsTheDefaultDeviceAndSaysWhy) {
  for (const char* backend : {"auto", "gloo"}) {
    auto c = choose_device(RuntimeOptions().device("auto").backend(backend));
    EXPECT_EQ(c.device, ddp::default_device()) << "--backend " << backend << " does not change the device";
    if (c.device.is_cuda()) {
      EXPECT_NE(c.why.find("CUDA is usable"), std::string::npos) << c.why;
    } else {
      EXPECT_EQ(c.why, "--device auto: " + ddp::cpu_fallback_reason());
    }
  }
}

TEST(DeviceChoice, CudaWithoutCudaAndNcclOnCpuAreConfigErrors) {
  EXPECT_NE(error_of(RuntimeOptions().device("cpu").backend("nccl")).find("--backend nccl needs CUDA tensors"),
            std::string::npos);
  if (ddp::default_device().is_cuda()) {
    EXPECT_TRUE(choose_device(RuntimeOptions().device("cuda")).device.is_cuda());
    EXPECT_TRUE(choose_device(RuntimeOptions().device("auto").backend("nccl")).device.is_cuda());
    return;
  }
  EXPECT_NE(error_of(RuntimeOptions().device("cuda")).find("--device cuda, but CUDA is not usable here"), std::string::npos);
  EXPECT_NE(error_of(RuntimeOptions().device("auto").backend("nccl")).find("--backend nccl needs CUDA tensors"),
            std::string::npos);
}

#include "util/version_banner.h"

#include <ddp/version.h>
#include <torch/version.h>

namespace ddp::util {

std::string version_banner(const std::string& program) {
  return program + " " + version() + " (LibTorch " + TORCH_VERSION + ", NCCL " + (DDP_WITH_NCCL ? "yes" : "no") + ")";
}

}  // namespace ddp::util

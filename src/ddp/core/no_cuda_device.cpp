#include "ddp/core/no_cuda_device.h"

#include <cstdlib>

namespace ddp::detail {

std::string no_cuda_device_visible() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return std::string("no CUDA device visible") +
         (visible ? " (CUDA_VISIBLE_DEVICES='" + std::string(visible) + "')" : std::string());
}

}  // namespace ddp::detail

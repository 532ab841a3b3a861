#include "amp.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <ddp/errors.h>

namespace train_ranzcr {
namespace {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
void enable_cuda_bf16(bool on) {
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCUDA, on);
}
#else
void enable_cuda_bf16(bool on) {
  at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  at::autocast::set_enabled(on);
}
#endif

}  // namespace

bool autocast_wanted(const std::string& amp_flag, const ddp::trainer::DeviceChoice& device) {
  if (amp_flag != "bf16") return false;
  if (!device.device.is_cuda())
    throw ddp::ConfigError("--amp bf16 needs a CUDA device; this run uses " + device.device.str() + " (" + device.why + ")");
  return true;
}

AutocastScope::AutocastScope(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  enable_cuda_bf16(true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  // Leaving the outermost scope drops the cast weights cached for this forward.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  enable_cuda_bf16(false);
}

}  // namespace train_ranzcr

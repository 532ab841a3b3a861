#pragma once
// bfloat16 autocast on CUDA for the forward pass (--amp bf16). bf16 keeps fp32's exponent range,
// so no gradient scaler is needed. The LibTorch API changed in 2.4; amp.cpp holds both spellings.
//
//   const bool amp = autocast_wanted(options.amp, device);    // before joining the group
//   { AutocastScope amp(enabled); logits = model(x); }   // loss computed in fp32 outside

#include <string>

#include "trainer/session.h"

namespace train_ranzcr {

/// --amp on the chosen device: true for bf16 on CUDA. ConfigError for bf16 without CUDA (bf16 on
/// CPUs without bf16 units is slower than fp32: refused rather than a surprise).
bool autocast_wanted(const std::string& amp_flag, const ddp::trainer::DeviceChoice& device);

class AutocastScope {
 public:
  explicit AutocastScope(bool enabled);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
};

}  // namespace train_ranzcr

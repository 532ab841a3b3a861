#pragma once
// bfloat16 autocast on CUDA for the forward pass (--amp bf16). bf16 keeps fp32's exponent range,
// so no gradient scaler is needed. The LibTorch API changed in 2.4; amp.cpp holds both spellings.
//
//   { AutocastScope amp(enabled); logits = model(x); }   // loss computed in fp32 outside

namespace train_ranzcr {

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

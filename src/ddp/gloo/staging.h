#pragma once
// Where a collective's data lives. Gloo works on flat contiguous buffers; callers pass lists of
// tensors of any shape, dtype and layout. A FusionGroup is a set of same-dtype tensors that one
// Gloo call handles: either one contiguous tensor used in place (no copies), or several tensors
// copied back to back into scratch memory and copied back after the call.

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

namespace ddp::gloo_backend {

struct FusionGroup {
  c10::ScalarType dtype;
  std::vector<at::Tensor> members;
  int64_t numel = 0;
  /// members.size() == 1 and the tensor is contiguous: the collective runs on its memory.
  bool in_place = false;
};

/// Splits `tensors` (zero-element ones are dropped) into groups: a contiguous tensor of at least
/// `in_place_min_bytes`, or one that is alone with its dtype, runs in place; the rest are fused,
/// one group per dtype, in order of first appearance.
std::vector<FusionGroup> plan_fusion(const std::vector<at::Tensor>& tensors, size_t in_place_min_bytes);

/// Scratch memory reused across operations (grows, never shrinks). Only the group's worker
/// thread uses it, one operation at a time.
class ScratchArena {
 public:
  /// Frees every region handed out so far (call at the start of each operation).
  void reset() { used_ = 0; }
  /// A 1-D contiguous tensor of `numel` elements of `dtype`, 64-byte aligned.
  at::Tensor take(c10::ScalarType dtype, int64_t numel);

 private:
  at::Tensor bytes_;
  size_t used_ = 0;
};

/// A group's flat buffer while an operation runs.
class Staged {
 public:
  Staged(const FusionGroup& group, ScratchArena& arena);
  /// Copies the members into the flat buffer (nothing to do in place).
  void pack();
  /// Copies the flat buffer back into the members (nothing to do in place).
  void unpack();
  at::Tensor& flat() { return flat_; }
  void* data() const { return flat_.data_ptr(); }
  size_t bytes() const { return flat_.nbytes(); }
  int64_t numel() const { return flat_.numel(); }

 private:
  const FusionGroup& group_;
  at::Tensor flat_;
};

/// Copies `src` (any layout) into `dst_flat` (1-D, same numel and dtype) and back.
void copy_into_flat(const at::Tensor& src, const at::Tensor& dst_flat);
void copy_from_flat(const at::Tensor& src_flat, const at::Tensor& dst);

}  // namespace ddp::gloo_backend

#include "ddp/gloo/staging.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <map>

namespace ddp::gloo_backend {

std::vector<FusionGroup> plan_fusion(const std::vector<at::Tensor>& tensors, size_t in_place_min_bytes) {
  std::vector<FusionGroup> groups;
  std::map<c10::ScalarType, size_t> fused_index;  // dtype -> index in `groups` of its fused group
  std::map<c10::ScalarType, int> count_by_dtype;
  for (const auto& t : tensors)
    if (t.numel() > 0) ++count_by_dtype[t.scalar_type()];
  for (const auto& t : tensors) {
    if (t.numel() == 0) continue;
    auto dtype = t.scalar_type();
    bool alone = count_by_dtype[dtype] == 1;
    if (t.is_contiguous() && (alone || t.nbytes() >= in_place_min_bytes)) {
      groups.push_back({dtype, {t}, t.numel(), true});
      continue;
    }
    auto it = fused_index.find(dtype);
    if (it == fused_index.end()) {
      it = fused_index.emplace(dtype, groups.size()).first;
      groups.push_back({dtype, {}, 0, false});
    }
    groups[it->second].members.push_back(t);
    groups[it->second].numel += t.numel();
  }
  return groups;
}

at::Tensor ScratchArena::take(c10::ScalarType dtype, int64_t numel) {
  constexpr size_t kAlign = 64;
  size_t bytes = static_cast<size_t>(numel) * c10::elementSize(dtype);
  size_t start = (used_ + kAlign - 1) / kAlign * kAlign;
  if (!bytes_.defined() || start + bytes > static_cast<size_t>(bytes_.numel())) {
    // Regions handed out earlier keep the old storage alive; later operations use the new one.
    size_t capacity = std::max(bytes, bytes_.defined() ? 2 * static_cast<size_t>(bytes_.numel()) : bytes);
    // c10's CPU allocator aligns to 64 bytes, so offsets that are multiples of 64 stay aligned.
    bytes_ = at::empty({static_cast<int64_t>(capacity)}, at::TensorOptions().dtype(at::kByte));
    start = 0;
  }
  used_ = start + bytes;
  return bytes_.narrow(0, static_cast<int64_t>(start), static_cast<int64_t>(bytes)).view(dtype);
}

void copy_into_flat(const at::Tensor& src, const at::Tensor& dst_flat) {
  if (src.is_contiguous()) {
    dst_flat.copy_(src.view({-1}));
  } else {
    dst_flat.view(src.sizes()).copy_(src);
  }
}

void copy_from_flat(const at::Tensor& src_flat, const at::Tensor& dst) {
  if (dst.is_contiguous()) {
    dst.view({-1}).copy_(src_flat);
  } else {
    dst.copy_(src_flat.view(dst.sizes()));
  }
}

Staged::Staged(const FusionGroup& group, ScratchArena& arena) : group_(group) {
  if (group.in_place) {
    flat_ = group.members[0].view({-1});
  } else {
    flat_ = arena.take(group.dtype, group.numel);
  }
}

void Staged::pack() {
  if (group_.in_place) return;
  int64_t offset = 0;
  for (const auto& t : group_.members) {
    copy_into_flat(t, flat_.narrow(0, offset, t.numel()));
    offset += t.numel();
  }
}

void Staged::unpack() {
  if (group_.in_place) return;
  int64_t offset = 0;
  for (const auto& t : group_.members) {
    copy_from_flat(flat_.narrow(0, offset, t.numel()), t);
    offset += t.numel();
  }
}

}  // namespace ddp::gloo_backend

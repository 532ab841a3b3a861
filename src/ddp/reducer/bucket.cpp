// Bucket memory and the parameter-shaped windows into it.
#include "ddp/reducer/bucket.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/util/strides.h>

#include <map>
#include <string>

namespace ddp::detail {

at::Tensor window(const at::Tensor& buffer, int64_t offset, const at::Tensor& like) {
  at::NoGradGuard no_grad;
  // set_() shares the storage without recording a view relationship: the window is a plain
  // tensor, so optimizers may detach_() it (zero_grad does) and it aliases the bucket all the same.
  at::Tensor w = at::empty({0}, buffer.options());
  if (like.is_non_overlapping_and_dense())
    w.set_(buffer.storage(), buffer.storage_offset() + offset, like.sizes(), like.strides());
  else
    w.set_(buffer.storage(), buffer.storage_offset() + offset, like.sizes(),
           c10::contiguous_strides(like.sizes()));
  return w;
}

Bucket make_bucket(const std::vector<at::Tensor>& params, std::vector<size_t> variables) {
  Bucket b;
  b.variables = std::move(variables);
  const at::Tensor& first = params[b.variables.front()];
  int64_t numel = 0;
  for (size_t v : b.variables) numel += params[v].numel();
  b.buffer = at::zeros({numel}, first.options().requires_grad(false));
  int64_t offset = 0;
  for (size_t v : b.variables) {
    b.views.push_back(window(b.buffer, offset, params[v]));
    offset += params[v].numel();
  }
  b.pending = b.variables.size();
  return b;
}

void bucket_groups(const std::vector<at::Tensor>& params, std::vector<int>& group,
                   std::vector<int64_t>& bytes) {
  std::map<std::pair<std::string, int>, int> ids;
  group.resize(params.size());
  bytes.resize(params.size());
  for (size_t v = 0; v < params.size(); ++v) {
    auto key = std::make_pair(params[v].device().str(), static_cast<int>(params[v].scalar_type()));
    group[v] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
    bytes[v] = params[v].numel() * static_cast<int64_t>(params[v].element_size());
  }
}

}  // namespace ddp::detail

#pragma once
// One bucket: a flat buffer on the parameters' device holding the gradients of a few parameters,
// with a parameter-shaped window into it per parameter.

#include <ddp/comm_hooks.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

namespace ddp::detail {

struct Bucket {
  std::vector<size_t> variables;  ///< parameter indices, in buffer order
  at::Tensor buffer;              ///< flat, dtype and device of its parameters
  /// views[i]: shaped (and strided, when dense) like parameter variables[i], aliasing buffer. Not
  /// autograd views, so a gradient that is one can still be detach_()ed by an optimizer.
  std::vector<at::Tensor> views;

  // Per iteration.
  size_t pending = 0;  ///< parameters whose gradient has not arrived yet
  bool launched = false;
  WorkPtr work;        ///< the allreduce (no comm hook)
  CommFuture future;   ///< the comm hook's result
};

/// Allocates the buffer (zeros) for `variables` of `params` and cuts the views.
Bucket make_bucket(const std::vector<at::Tensor>& params, std::vector<size_t> variables);

/// A tensor shaped like `like` over buffer's storage from element `offset`: like's strides when it
/// is dense, else contiguous ones (the gradient layout contract of AccumulateGrad).
at::Tensor window(const at::Tensor& buffer, int64_t offset, const at::Tensor& like);

/// Per parameter: its (device, dtype) group id and its size in bytes, for assign_buckets().
void bucket_groups(const std::vector<at::Tensor>& params, std::vector<int>& group,
                   std::vector<int64_t>& bytes);

}  // namespace ddp::detail

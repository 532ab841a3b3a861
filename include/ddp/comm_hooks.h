#pragma once
// Communication hooks: how DistributedDataParallel reduces one bucket of gradients
// (PyTorch's register_comm_hook).
//
//   model.register_comm_hook(ddp::comm_hooks::fp16_compress(pg));   // built-in compression
//
//   model.register_comm_hook([pg](ddp::GradBucket& bucket) {         // a hook of your own
//     std::vector<at::Tensor> t = {bucket.buffer()};
//     ddp::WorkPtr work = pg->allreduce(t);
//     return ddp::CommFuture(work, [t, n = pg->size()] { return t[0].div_(n); });
//   });
//
// A hook receives the bucket's flat buffer holding this rank's gradients (not yet divided by the
// world size) and returns a CommFuture whose value is the flat tensor of averaged gradients: same
// numel and dtype as the buffer, possibly the buffer itself. Hooks run in bucket order on every
// rank, on the autograd thread, as buckets fill during backward, so collectives issued inside a
// hook are issued in the same order everywhere. The future's continuation runs when DDP waits for
// the bucket at the end of backward.

#include <ddp/export.h>
#include <ddp/process_group.h>

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

namespace ddp {

/// One bucket of gradients as a comm hook sees it.
class DDP_API GradBucket {
 public:
  GradBucket(size_t index, bool is_last, at::Tensor buffer, std::vector<at::Tensor> gradients,
             std::vector<at::Tensor> parameters)
      : index_(index),
        is_last_(is_last),
        buffer_(std::move(buffer)),
        gradients_(std::move(gradients)),
        parameters_(std::move(parameters)) {}

  /// Position in launch order (0 is reduced first).
  size_t index() const { return index_; }
  bool is_last() const { return is_last_; }
  /// Flat gradients of every parameter in the bucket, on the parameters' device.
  const at::Tensor& buffer() const { return buffer_; }
  /// Views into buffer(), shaped like the parameters.
  const std::vector<at::Tensor>& gradients() const { return gradients_; }
  const std::vector<at::Tensor>& parameters() const { return parameters_; }

 private:
  size_t index_;
  bool is_last_;
  at::Tensor buffer_;
  std::vector<at::Tensor> gradients_;
  std::vector<at::Tensor> parameters_;
};

/// The eventual result of a comm hook: a flat tensor of averaged gradients.
class DDP_API CommFuture {
 public:
  CommFuture() = default;
  /// Done when `work` is; the value is `then()`, evaluated once, after work->wait().
  CommFuture(WorkPtr work, std::function<at::Tensor()> then);
  /// Already done.
  static CommFuture ready(at::Tensor value);

  /// Blocks until done and returns the value; rethrows the work's or continuation's error.
  at::Tensor wait();
  bool is_completed() const;
  bool valid() const { return static_cast<bool>(state_); }

 private:
  struct State;
  std::shared_ptr<State> state_;
};

using CommHook = std::function<CommFuture(GradBucket& bucket)>;

namespace comm_hooks {

/// Sum then divide by the world size, as DDP does without a hook (useful to compose with).
DDP_API CommHook allreduce(std::shared_ptr<ProcessGroup> pg);
/// Casts the bucket to float16, pre-divided by the world size, allreduces it and casts back:
/// half the bytes on the wire. Gradients outside float16's range lose precision (or overflow).
DDP_API CommHook fp16_compress(std::shared_ptr<ProcessGroup> pg);
/// As fp16_compress with bfloat16: float32's range, 8 bits of mantissa.
DDP_API CommHook bf16_compress(std::shared_ptr<ProcessGroup> pg);

}  // namespace comm_hooks
}  // namespace ddp

// CommFuture and the built-in comm hooks (allreduce, fp16 and bf16 compression).
#include <ddp/comm_hooks.h>
#include <ddp/errors.h>

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <mutex>

namespace ddp {

struct CommFuture::State {
  std::mutex mutex;
  WorkPtr work;
  std::function<at::Tensor()> then;
  at::Tensor value;
  bool done = false;
};

CommFuture::CommFuture(WorkPtr work, std::function<at::Tensor()> then)
    : state_(std::make_shared<State>()) {
  state_->work = std::move(work);
  state_->then = std::move(then);
}

CommFuture CommFuture::ready(at::Tensor value) {
  CommFuture f;
  f.state_ = std::make_shared<State>();
  f.state_->value = std::move(value);
  f.state_->done = true;
  return f;
}

at::Tensor CommFuture::wait() {
  if (!state_) throw ConfigError("CommFuture::wait() on an empty future");
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->done) {
    if (state_->work) state_->work->wait();
    at::NoGradGuard no_grad;
    state_->value = state_->then ? state_->then() : at::Tensor();
    state_->done = true;
  }
  return state_->value;
}

bool CommFuture::is_completed() const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done || !state_->work || state_->work->is_completed();
}

namespace comm_hooks {
namespace {

void require_pg(const std::shared_ptr<ProcessGroup>& pg, const char* hook) {
  if (!pg) throw ConfigError(std::string("comm_hooks::") + hook + ": the process group is null");
}

CommHook compress(std::shared_ptr<ProcessGroup> pg, at::ScalarType wire, const char* name) {
  require_pg(pg, name);
  return [pg, wire](GradBucket& bucket) {
    at::NoGradGuard no_grad;
    const at::Tensor& buffer = bucket.buffer();
    // Divide before compressing: the sum of world-size terms then stays in range.
    at::Tensor compressed = buffer.mul(1.0 / pg->size()).to(wire);
    std::vector<at::Tensor> t = {compressed};
    WorkPtr work = pg->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
    return CommFuture(work, [buffer, compressed] {
      buffer.copy_(compressed);
      return buffer;
    });
  };
}

}  // namespace

CommHook allreduce(std::shared_ptr<ProcessGroup> pg) {
  require_pg(pg, "allreduce");
  return [pg](GradBucket& bucket) {
    // Divide first, then sum: what DDP does without a hook, bit for bit.
    at::Tensor buffer = bucket.buffer();
    {
      at::NoGradGuard no_grad;
      buffer.mul_(1.0 / pg->size());
    }
    std::vector<at::Tensor> t = {buffer};
    WorkPtr work = pg->allreduce(t, AllreduceOptions().op(ReduceOp::kSum));
    return CommFuture(work, [buffer] { return buffer; });
  };
}

CommHook fp16_compress(std::shared_ptr<ProcessGroup> pg) {
  return compress(std::move(pg), at::kHalf, "fp16_compress");
}

CommHook bf16_compress(std::shared_ptr<ProcessGroup> pg) {
  return compress(std::move(pg), at::kBFloat16, "bf16_compress");
}

}  // namespace comm_hooks
}  // namespace ddp

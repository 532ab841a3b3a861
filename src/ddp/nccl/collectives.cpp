// The collectives: argument checks (ConfigError naming the op and the tensor), then the NCCL calls
// that launch() wraps in ncclGroupStart/End.
#include "ddp/nccl/process_group_nccl.h"
#include "ddp/nccl/types.h"

#include <ddp/errors.h>

#include <c10/core/ScalarType.h>

#include <cstdio>

namespace ddp::nccl_backend {
namespace {

std::string describe_bytes(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

size_t total_bytes(const std::vector<at::Tensor>& tensors) {
  size_t n = 0;
  for (const auto& t : tensors) n += t.nbytes();
  return n;
}

/// True when the tensors lie back to back in one allocation, in order (a flat buffer's views).
bool back_to_back(const std::vector<at::Tensor>& tensors) {
  if (tensors.empty()) return false;
  auto* base = static_cast<const char*>(tensors[0].data_ptr());
  const size_t step = tensors[0].nbytes();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].is_contiguous()) return false;
    if (static_cast<const char*>(tensors[i].data_ptr()) != base + i * step) return false;
  }
  return true;
}

}  // namespace

void ProcessGroupNccl::check_tensor(const std::string& op, const at::Tensor& t, size_t index, bool reduction) const {
  const std::string which = "nccl " + op + ": tensor " + std::to_string(index);
  if (!t.defined()) throw ConfigError(which + " is undefined");
  if (!t.is_cuda() || t.get_device() != device_)
    throw ConfigError(which + " is on " + t.device().str() + "; process group nccl (" + where() +
                      ") takes CUDA tensors on cuda:" + std::to_string(device_));
  if (t.layout() != c10::kStrided) throw ConfigError(which + " is not a strided (dense) tensor");
  if (!t.is_contiguous() && !t.unsafeGetTensorImpl()->is_non_overlapping_and_dense())
    throw ConfigError(which + " is not dense (overlapping or gapped strides); call .contiguous() first");
  if (reduction && !reduction_type(t.scalar_type()))
    throw ConfigError(which + " has dtype " + std::string(c10::toString(t.scalar_type())) +
                      "; reductions take float32, float64, float16, bfloat16, int32 and int64");
}

WorkPtr ProcessGroupNccl::allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) {
  for (size_t i = 0; i < tensors.size(); ++i) check_tensor("allreduce", tensors[i], i, /*reduction=*/true);
  const ncclRedOp_t op = reduction_op(opts.op());
  Launch l{"allreduce",
           std::string(reduction_name(opts.op())) + ", " + std::to_string(tensors.size()) + " tensors, " +
               describe_bytes(total_bytes(tensors)),
           op_timeout(opts.timeout()), tensors};
  return launch(std::move(l), [&tensors, op](ncclComm_t comm, cudaStream_t stream) {
    for (auto& t : tensors) {
      if (t.numel() == 0) continue;
      ncclResult_t r = ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                                     *reduction_type(t.scalar_type()), op, comm, stream);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    return ncclSuccess;
  });
}

WorkPtr ProcessGroupNccl::broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) {
  const int root = opts.root();
  if (root < 0 || root >= size_)
    throw ConfigError("nccl broadcast: root " + std::to_string(root) + " is not a rank of this group (size " +
                      std::to_string(size_) + ")");
  for (size_t i = 0; i < tensors.size(); ++i) check_tensor("broadcast", tensors[i], i, /*reduction=*/false);
  Launch l{"broadcast",
           "root " + std::to_string(root) + ", " + std::to_string(tensors.size()) + " tensors, " +
               describe_bytes(total_bytes(tensors)),
           op_timeout(opts.timeout()), tensors};
  return launch(std::move(l), [&tensors, root](ncclComm_t comm, cudaStream_t stream) {
    for (auto& t : tensors) {
      if (t.numel() == 0) continue;
      // Pure data movement: bytes, so every dtype works.
      ncclResult_t r = ncclBroadcast(t.data_ptr(), t.data_ptr(), t.nbytes(), ncclUint8, root, comm, stream);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    return ncclSuccess;
  });
}

WorkPtr ProcessGroupNccl::allgather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                    const CollectiveOptions& opts) {
  check_tensor("allgather", input, 0, /*reduction=*/false);
  if (outputs.size() != static_cast<size_t>(size_))
    throw ConfigError("nccl allgather: " + std::to_string(outputs.size()) + " output tensors for a group of " +
                      std::to_string(size_));
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_tensor("allgather (output)", outputs[i], i, false);
    if (outputs[i].sizes() != input.sizes() || outputs[i].scalar_type() != input.scalar_type())
      throw ConfigError("nccl allgather: output " + std::to_string(i) + " does not match the input's shape and dtype");
  }
  if (!input.is_contiguous()) throw ConfigError("nccl allgather: the input must be contiguous");
  std::vector<at::Tensor> keep = outputs;
  keep.push_back(input);
  const bool flat = back_to_back(outputs);
  Launch l{"allgather", describe_bytes(input.nbytes()) + " per rank" + (flat ? ", flat" : ", list"),
           op_timeout(opts.timeout()), std::move(keep)};
  return launch(std::move(l), [&outputs, &input, flat, this](ncclComm_t comm, cudaStream_t stream) {
    const size_t bytes = input.nbytes();
    if (bytes == 0) return ncclSuccess;
    if (flat)
      return ncclAllGather(input.data_ptr(), outputs[0].data_ptr(), bytes, ncclUint8, comm, stream);
    // Separate output tensors: one broadcast per rank in the same NCCL group.
    for (int r = 0; r < size_; ++r) {
      void* send = r == rank_ ? input.data_ptr() : outputs[r].data_ptr();
      ncclResult_t res = ncclBroadcast(send, outputs[r].data_ptr(), bytes, ncclUint8, r, comm, stream);
      if (res != ncclSuccess && res != ncclInProgress) return res;
    }
    return ncclSuccess;
  });
}

WorkPtr ProcessGroupNccl::reduce_scatter(at::Tensor& output, std::vector<at::Tensor>& inputs,
                                         const ReduceScatterOptions& opts) {
  check_tensor("reduce_scatter (output)", output, 0, /*reduction=*/true);
  if (inputs.size() != static_cast<size_t>(size_))
    throw ConfigError("nccl reduce_scatter: " + std::to_string(inputs.size()) + " input tensors for a group of " +
                      std::to_string(size_));
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_tensor("reduce_scatter", inputs[i], i, true);
    if (inputs[i].sizes() != output.sizes() || inputs[i].scalar_type() != output.scalar_type())
      throw ConfigError("nccl reduce_scatter: input " + std::to_string(i) +
                        " does not match the output's shape and dtype");
  }
  if (!output.is_contiguous()) throw ConfigError("nccl reduce_scatter: the output must be contiguous");
  std::vector<at::Tensor> keep = inputs;
  keep.push_back(output);
  const bool flat = back_to_back(inputs);
  const ncclRedOp_t op = reduction_op(opts.op());
  const ncclDataType_t type = *reduction_type(output.scalar_type());
  Launch l{"reduce_scatter",
           std::string(reduction_name(opts.op())) + ", " + describe_bytes(output.nbytes()) + " per rank" +
               (flat ? ", flat" : ", list"),
           op_timeout(opts.timeout()), std::move(keep)};
  return launch(std::move(l), [&output, &inputs, flat, op, type, this](ncclComm_t comm, cudaStream_t stream) {
    const size_t count = static_cast<size_t>(output.numel());
    if (count == 0) return ncclSuccess;
    if (flat) return ncclReduceScatter(inputs[0].data_ptr(), output.data_ptr(), count, type, op, comm, stream);
    // Separate inputs: rank r's share is the reduction of everyone's inputs[r].
    for (int r = 0; r < size_; ++r) {
      ncclResult_t res = ncclReduce(inputs[r].data_ptr(), output.data_ptr(), count, type, op, r, comm, stream);
      if (res != ncclSuccess && res != ncclInProgress) return res;
    }
    return ncclSuccess;
  });
}

WorkPtr ProcessGroupNccl::barrier(const CollectiveOptions& opts) {
  Launch l{"barrier", "1-element allreduce", op_timeout(opts.timeout()), {}, /*cpu_blocking_wait=*/true};
  void* buffer = barrier_buffer_;
  return launch(std::move(l), [buffer](ncclComm_t comm, cudaStream_t stream) {
    return ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, comm, stream);
  });
}

}  // namespace ddp::nccl_backend

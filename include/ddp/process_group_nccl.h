#pragma once
// The NCCL process group (CUDA tensors). Available when ddp was built with NCCL and the LibTorch in
// use has CUDA and sees a device; ddp::nccl_available() tells at run time, and
// ddp::nccl_unavailable_reason() says why not.
//
//   auto pg = ddp::make_nccl_process_group(store, rank, world_size, /*device_index=*/local_rank);
//   pg->allreduce(grads, ddp::AllreduceOptions().op(ddp::ReduceOp::kAvg))->wait();
//
// How it orders with PyTorch's kernels (as c10d's ProcessGroupNCCL does):
//  - every collective runs on the group's own CUDA stream, after the work already queued on the
//    caller's current stream (an event handshake: the CPU is never blocked);
//  - Work::wait() makes the caller's current stream wait for the collective and returns at once
//    (the CPU does not block; kernels queued afterwards see the result). Reading a result on the CPU
//    (tensor.cpu(), .item()) synchronizes as usual. NcclOptions::blocking_wait (or
//    DDP_NCCL_BLOCKING_WAIT=1; c10d's TORCH_NCCL_BLOCKING_WAIT / NCCL_BLOCKING_WAIT are read too)
//    makes wait() block the CPU too; barrier()->wait() always does;
//  - wait(timeout) blocks the CPU until done or throws TimeoutError after `timeout`;
//  - an op keeps its tensors alive until it finished and (LibTorch 2.x) records them on the group's
//    stream with the caching allocator; DDP_NCCL_RECORD_STREAMS=0, or c10d's
//    TORCH_NCCL_AVOID_RECORD_STREAMS=1 (the inverse sense), turns the recording off;
//  - a watchdog thread aborts the communicator when an operation exceeds its timeout or NCCL reports
//    an asynchronous error; the operation's wait() then throws TimeoutError / PeerError naming the
//    op, its sequence number and the rank, and every later call says the group is unusable.
// Tensors must be CUDA tensors on the group's device, dense (contiguous or non-overlapping and
// dense). Reductions take float32, float64, float16, bfloat16, int32 and int64; broadcast and
// allgather move any dtype.

#include <ddp/export.h>
#include <ddp/process_group.h>
#include <ddp/store.h>
#include <torch/arg.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace ddp {

/// Chained setters as in LibTorch (TORCH_ARG): NcclOptions().blocking_wait(true).
struct NcclOptions {
  /// A collective running longer than this aborts the communicator (watchdog). Also bounds the
  /// communicator's creation.
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::minutes(10);
  /// Work::wait() blocks the CPU until the operation finished (bounded by its timeout) instead of
  /// only ordering the caller's stream after it. The environment overrides it when set:
  /// DDP_NCCL_BLOCKING_WAIT, else c10d's TORCH_NCCL_BLOCKING_WAIT, else NCCL_BLOCKING_WAIT (1 or 0).
  TORCH_ARG(bool, blocking_wait) = false;
  /// The launcher's restart attempt, part of the unique id's store key, so a store that outlives a
  /// restart (ddprun's, a TorchElastic agent's) never hands a restarted rank the previous attempt's
  /// id. Unset: $TORCHELASTIC_RESTART_COUNT, or 0 (as WorldInfo::from_env() reads it);
  /// init_process_group() passes its WorldInfo's.
  TORCH_ARG(std::optional<int>, restart_count);
};

/// True when ddp was built with NCCL, LibTorch has CUDA, and at least one CUDA device is usable.
DDP_API bool nccl_available();
/// Why nccl_available() is false ("LibTorch has no CUDA ...", "no CUDA device visible ...",
/// "ddp was built without NCCL ..."), or "" when it is true.
DDP_API std::string nccl_unavailable_reason();
/// Version of the NCCL library ddp is running with ("2.28.9"), or "" when built without NCCL.
/// Needs no GPU.
DDP_API std::string nccl_version();

/// Creates the communicator on CUDA device `device_index` (made the current device of the calling
/// thread): rank 0 creates the NCCL unique id and publishes it through `store` (key
/// "nccl/<restart>/<n>/unique_id": options.restart_count, and n counting the NCCL groups this
/// process created), every rank reads it and joins. ConfigError when NCCL is unavailable or the
/// arguments are wrong; TimeoutError when the other ranks do not join within options.timeout.
DDP_API std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                              int device_index, NcclOptions options = {});

}  // namespace ddp

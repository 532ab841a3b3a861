#pragma once
// The NCCL process group (CUDA tensors). Available when ddp was built with NCCL
// (ddp::nccl_available() tells at run time whether it was and whether a GPU is usable).
//
//   auto pg = ddp::make_nccl_process_group(store, rank, world_size, /*device_index=*/local_rank);

#include <ddp/process_group.h>
#include <ddp/store.h>

#include <chrono>
#include <memory>

namespace ddp {

struct NcclOptions {
  /// A collective running longer than this aborts the communicator (watchdog).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
};

/// True when ddp was built with NCCL and at least one CUDA device is usable.
bool nccl_available();
/// Why nccl_available() is false ("built without NCCL", "no CUDA device visible", ...), or "".
std::string nccl_unavailable_reason();

/// Creates the communicator (rank 0 publishes the unique id through `store`) on device `device_index`.
/// ConfigError when NCCL is unavailable.
std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                      int device_index, NcclOptions options = {});

}  // namespace ddp

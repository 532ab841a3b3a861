#pragma once
// One call from environment to a ready process group.
//
//   auto pg = ddp::init_process_group();          // env -> WorldInfo -> store -> backend
//   torch::Device device = ddp::default_device(); // cuda:LOCAL_RANK when usable, else cpu
//
// "auto" backend: NCCL when the default device is CUDA and ddp has NCCL, Gloo otherwise.

#include <ddp/export.h>
#include <ddp/process_group.h>
#include <ddp/store.h>
#include <ddp/world_info.h>

#include <c10/core/Device.h>
#include <torch/arg.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace ddp {

/// Chained setters as in LibTorch (TORCH_ARG): InitOptions().backend("gloo").timeout(...).
struct InitOptions {
  /// "auto", "gloo" or "nccl".
  TORCH_ARG(std::string, backend) = "auto";
  /// Collective timeout (Gloo default 30 min, NCCL 10 min when left at 0).
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
  /// How long to keep trying to reach the store (DNS failures, refused connections).
  TORCH_ARG(std::chrono::milliseconds, store_connect_timeout) = std::chrono::minutes(5);
  /// Use this instead of WorldInfo::from_env().
  TORCH_ARG(std::optional<WorldInfo>, world);
  /// Device for the "auto" choice; default_device() when unset.
  TORCH_ARG(std::optional<c10::Device>, device);
};

/// Reads the environment, joins the store and builds the process group. Remembers the result so
/// ddp::world() and ddp::store() can find it later. ConfigError on bad environment or backend.
DDP_API std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options = {});

/// The WorldInfo / store of the last init_process_group() (the store is null before).
DDP_API const WorldInfo& world();
DDP_API std::shared_ptr<Store> store();

/// cuda:LOCAL_RANK when LibTorch has CUDA and a device is visible, else cpu.
DDP_API c10::Device default_device();
/// Why default_device() is cpu ("LibTorch built without CUDA", "no CUDA device visible"), or "".
DDP_API std::string cpu_fallback_reason();

}  // namespace ddp

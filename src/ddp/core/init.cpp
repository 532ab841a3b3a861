// init_process_group(): environment -> WorldInfo -> TCP store -> backend.
#include <ddp/errors.h>
#include <ddp/init.h>
#include <ddp/logging.h>
#include <ddp/process_group_gloo.h>
#include <ddp/process_group_nccl.h>

#include <mutex>

#include "ddp/core/init_state.h"

namespace ddp {
namespace {

struct InitState {
  std::mutex mu;
  bool has_world = false;  // set once init_process_group read the environment
  WorldInfo world;
  std::shared_ptr<Store> store;
};

InitState& state() {
  static InitState s;
  return s;
}

std::shared_ptr<Store> connect_store(const WorldInfo& world, std::chrono::milliseconds timeout,
                                     std::chrono::milliseconds connect_timeout) {
  TCPStoreOptions o;
  o.timeout(timeout).connect_timeout(connect_timeout);
  if (world.source == "single" && world.world_size == 1) {
    // Nothing in the environment: a private store on a free loopback port.
    o.host("127.0.0.1").port(0).is_server(true);
    return std::make_shared<TCPStore>(o);
  }
  // As torch.distributed's env:// rendezvous: rank 0 hosts the server, unless a TorchElastic-style
  // agent already does; then every rank is a client and keys go under "/worker/attempt_<restart>"
  // so a restarted job never reads the keys of the attempt before it.
  o.host(world.master_addr).port(world.master_port).is_server(world.rank == 0 && !world.use_agent_store);
  auto tcp = std::make_shared<TCPStore>(o);
  if (!world.use_agent_store) return tcp;
  return std::make_shared<PrefixStore>("/worker/attempt_" + std::to_string(world.restart_count), tcp);
}

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options) {
  const std::string& requested = options.backend();
  if (requested != "auto" && requested != "gloo" && requested != "nccl")
    throw ConfigError("init_process_group: unknown backend '" + requested + "' (expected auto, gloo or nccl)");
  if (options.timeout().count() < 0)
    throw ConfigError("init_process_group: timeout must not be negative (got " +
                      std::to_string(options.timeout().count()) + " ms)");

  WorldInfo world = options.world() ? *options.world() : WorldInfo::from_env();
  set_log_rank(world.rank);
  {
    // default_device() reads LOCAL_RANK from here.
    std::lock_guard<std::mutex> lock(state().mu);
    state().world = world;
    state().has_world = true;
  }

  std::string backend = requested;
  std::string why;
  // Only auto and nccl need to know the device (default_device() may refuse a bad GPU mapping).
  c10::Device device = options.device() ? *options.device()
                       : backend == "gloo" ? c10::Device(c10::kCPU) : default_device();
  if (backend == "auto") {
    if (device.is_cuda() && nccl_available()) {
      backend = "nccl";
      why = " (auto: default device " + device.str() + ")";
    } else {
      backend = "gloo";
      if (device.is_cuda()) {
        why = " (auto: NCCL unavailable: " + nccl_unavailable_reason() + ")";
        DDP_LOG(WARN) << "default device is " << device.str() << " but " << nccl_unavailable_reason()
                      << "; using gloo, which only handles CPU tensors";
      } else {
        std::string reason = options.device() ? "device " + device.str() : cpu_fallback_reason();
        why = " (auto: " + (reason.empty() ? std::string("CPU") : reason) + ")";
      }
    }
  }

  // Fail before touching the store: an explicit nccl request on a machine without it is a config error.
  if (backend == "nccl" && !nccl_available())
    throw ConfigError("backend 'nccl' requested, but " + nccl_unavailable_reason() + "; use --backend gloo");

  // 0: the backend's own default (GlooOptions: 30 min, NcclOptions: 10 min).
  auto timeout = options.timeout().count() > 0 ? options.timeout()
                                               : (backend == "nccl" ? NcclOptions().timeout() : GlooOptions().timeout());
  auto store = connect_store(world, timeout, options.store_connect_timeout());

  std::shared_ptr<ProcessGroup> pg;
  if (backend == "gloo") {
    pg = make_gloo_process_group(store, world.rank, world.world_size, GlooOptions().timeout(timeout));
  } else {
    NcclOptions o;
    o.timeout(timeout).restart_count(world.restart_count);
    // The device this rank trains on (default_device() maps LOCAL_RANK to a visible device, and
    // picks device 0 when a launcher gave each rank exactly one).
    int device_index = world.local_rank;
    if (device.is_cuda() && device.has_index()) device_index = device.index();
    pg = make_nccl_process_group(store, world.rank, world.world_size, device_index, o);
  }

  {
    std::lock_guard<std::mutex> lock(state().mu);
    state().store = store;
  }
  DDP_LOG(INFO) << "process group ready: " << world.describe() << ", backend " << backend << why;
  return pg;
}

namespace detail {
int local_rank_for_device() {
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (state().has_world) return state().world.local_rank;
  }
  return WorldInfo::from_env().local_rank;
}
}  // namespace detail

const WorldInfo& world() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().world;
}

std::shared_ptr<Store> store() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().store;
}

}  // namespace ddp

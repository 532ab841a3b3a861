#include "ddp/nccl/process_group_nccl.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include "ddp/core/restart_count.h"
#include "ddp/nccl/settings.h"

#include <atomic>
#include <cstring>

namespace ddp {
namespace nccl_backend {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_groups_created{0};

/// Rank 0 creates the id and publishes it; everyone reads it back (the store blocks until it exists).
/// The key carries the launcher's restart count: a store that outlives a restart (ddprun's, the
/// TorchElastic agent's) must not hand a restarted rank the previous attempt's id.
ncclUniqueId exchange_unique_id(Store& store, int rank, int restart_count, int group_index) {
  const std::string key =
      "nccl/" + std::to_string(restart_count) + "/" + std::to_string(group_index) + "/unique_id";
  ncclUniqueId id;
  if (rank == 0) {
    check_nccl(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId", rank);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store.set(key, Store::Bytes(bytes, bytes + sizeof id));
    return id;
  }
  Store::Bytes value = store.get(key);
  if (value.size() != sizeof id)
    throw StoreError("store key '" + key + "' holds " + std::to_string(value.size()) + " bytes, not an NCCL unique id (" +
                     std::to_string(sizeof id) + " bytes): another program uses this store?");
  std::memcpy(&id, value.data(), sizeof id);
  return id;
}

FailureKind kind_of(const std::exception& e) {
  if (dynamic_cast<const TimeoutError*>(&e)) return FailureKind::kTimeout;
  if (dynamic_cast<const PeerError*>(&e)) return FailureKind::kPeer;
  if (dynamic_cast<const ConfigError*>(&e)) return FailureKind::kConfig;
  return FailureKind::kInternal;
}

}  // namespace

ProcessGroupNccl::ProcessGroupNccl(const std::shared_ptr<Store>& store, int rank, int size, int device,
                                   NcclOptions options)
    : ProcessGroup(rank, size, options.timeout()), device_(device), options_(options) {
  // Read before anything is created, so a bad value fails fast.
  const bool record_streams = record_streams_from_env(util::process_env());
  // The device stays current for this thread: NCCL, PyTorch's current stream and later tensor
  // allocations all refer to it (as torchrun scripts do with torch.cuda.set_device(LOCAL_RANK)).
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  const int group_index = g_groups_created++;
  ncclUniqueId id = exchange_unique_id(*store, rank, options.restart_count().value_or(0), group_index);
  DDP_LOG(DEBUG) << "nccl: creating communicator " << group_index << " (" << where() << ")";
  comm_ = std::make_unique<Communicator>(id, rank, size, device, options.timeout());
  bridge_ = std::make_shared<StreamBridge>(device, collective_stream(device), record_streams);
  check_cuda(cudaMalloc(&barrier_buffer_, sizeof(float)), "allocating the barrier buffer");
  check_cuda(cudaMemset(barrier_buffer_, 0, sizeof(float)), "clearing the barrier buffer");
  watchdog_ = std::thread([this] { watchdog_loop(); });
  DDP_LOG(INFO) << "process group nccl ready (" << where() << ", NCCL " << nccl_version() << ", timeout "
                << options.timeout().count() << " ms)";
}

ProcessGroupNccl::~ProcessGroupNccl() {
  {
    std::lock_guard<std::mutex> lk(pending_mutex_);
    stop_ = true;
  }
  pending_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  comm_.reset();  // finalize (flushes our work) or abort
  // Tensors kept for in-flight ops may only be released once the GPU is done with them; after an
  // abort the kernels end shortly. Bounded, so a wedged GPU cannot hang the exit.
  auto until = Clock::now() + std::chrono::seconds(10);
  for (auto& op : pending_)
    while (!op->poll_finished() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  pending_.clear();
  int current = 0;
  if (barrier_buffer_ && cudaGetDevice(&current) != cudaErrorCudartUnloading) cudaFree(barrier_buffer_);
}

std::string ProcessGroupNccl::where() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ", cuda:" + std::to_string(device_);
}

bool ProcessGroupNccl::failed() const {
  std::lock_guard<std::mutex> lk(error_mutex_);
  return failed_;
}

void ProcessGroupNccl::check_usable() const {
  std::lock_guard<std::mutex> lk(error_mutex_);
  if (!failed_) return;
  throw_error(error_kind_,
              "process group nccl (" + where() + ") is unusable after an earlier failure: " + error_message_, rank_);
}

void ProcessGroupNccl::fail(FailureKind kind, const std::string& message) {
  {
    std::lock_guard<std::mutex> lk(error_mutex_);
    if (failed_) return;
    failed_ = true;
    error_kind_ = kind;
    error_message_ = message;
  }
  DDP_LOG(ERROR) << message;
  comm_->abort();
  auto error = make_error(kind, message, rank_);
  std::lock_guard<std::mutex> lk(pending_mutex_);
  for (auto& op : pending_) op->fail(error);
}

std::chrono::milliseconds ProcessGroupNccl::op_timeout(std::chrono::milliseconds requested) const {
  return requested.count() > 0 ? requested : timeout_;
}

WorkPtr ProcessGroupNccl::launch(Launch launch, const Enqueue& enqueue) {
  check_usable();
  auto lk = comm_->lock();
  check_usable();  // the watchdog may have failed the group while we waited for the lock
  const uint64_t seq = ++seq_;
  const std::string description = launch.op + " #" + std::to_string(seq);
  DDP_LOG(DEBUG) << "nccl " << description << ": " << launch.detail << " (" << where() << ")";
  cudaEvent_t done = nullptr;
  try {
    DeviceScope scope(device_);
    bridge_->ours_wait_for_caller();
    check_nccl(ncclGroupStart(), comm_->handle(), "ncclGroupStart", rank_);
    ncclResult_t first = enqueue(comm_->handle(), bridge_->stream());
    ncclResult_t end = ncclGroupEnd();
    auto deadline = Clock::now() + launch.timeout;
    if (first != ncclSuccess && first != ncclInProgress) comm_->complete_call(first, "NCCL " + description, deadline);
    comm_->complete_call(end, "NCCL " + description, deadline);
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "creating a CUDA event");
    check_cuda(cudaEventRecord(done, bridge_->stream()), "recording the end of NCCL " + description);
    for (const auto& t : launch.keep_alive) bridge_->record_on_ours(t);
  } catch (const std::exception& e) {
    if (done) cudaEventDestroy(done);
    lk.unlock();  // fail() aborts the communicator, which takes the lock
    std::string message;
    {
      std::lock_guard<std::mutex> elk(error_mutex_);
      message = failed_ ? error_message_ : std::string();
    }
    if (!message.empty()) check_usable();  // the watchdog's reason is the real one
    // NCCL rejects invalid arguments without side effects: the communicator stays usable.
    if (kind_of(e) == FailureKind::kConfig) throw;
    fail(kind_of(e), std::string("NCCL ") + description + " (" + where() + "): " + e.what() +
                         "; the communicator was aborted and process group nccl is unusable");
    throw;
  }
  auto op = std::make_shared<OpState>(description, seq, done, launch.timeout, std::move(launch.keep_alive));
  {
    std::lock_guard<std::mutex> plk(pending_mutex_);
    pending_.push_back(op);
  }
  pending_cv_.notify_one();
  return std::make_shared<NcclWork>(op, bridge_, launch.cpu_blocking_wait || options_.blocking_wait());
}

}  // namespace nccl_backend

std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                      int device_index, NcclOptions options) {
  std::string reason = nccl_unavailable_reason();
  if (!reason.empty())
    throw ConfigError("backend 'nccl' requested, but " + reason + "; use --backend gloo (CPU tensors)");
  if (!store) throw ConfigError("make_nccl_process_group: the store is null");
  if (size < 1 || rank < 0 || rank >= size)
    throw ConfigError("make_nccl_process_group: rank " + std::to_string(rank) + " is not in [0, " +
                      std::to_string(size) + ")");
  int count = 0;
  nccl_backend::check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device_index < 0 || device_index >= count)
    throw ConfigError("make_nccl_process_group: CUDA device " + std::to_string(device_index) + " does not exist (" +
                      std::to_string(count) + " visible); is LOCAL_RANK larger than the GPUs per node?");
  if (options.timeout().count() <= 0)
    throw ConfigError("make_nccl_process_group: timeout must be positive, got " +
                      std::to_string(options.timeout().count()) + " ms");
  // A set variable overrides NcclOptions either way, as c10d's TORCH_NCCL_BLOCKING_WAIT does.
  const util::EnvMap env = util::process_env();
  if (auto blocking = nccl_backend::blocking_wait_from_env(env)) options.blocking_wait(*blocking);
  if (!options.restart_count()) options.restart_count(detail::restart_count_from_env(env));
  return std::make_shared<nccl_backend::ProcessGroupNccl>(store, rank, size, device_index, options);
}

}  // namespace ddp

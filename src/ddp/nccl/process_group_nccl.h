#pragma once
// The NCCL ProcessGroup: lifecycle and the launch path (process_group_nccl.cpp), the collectives' argument checks
// and NCCL calls (collectives.cpp), the watchdog (watchdog.cpp).

#include "ddp/nccl/communicator.h"
#include "ddp/nccl/errors.h"
#include "ddp/nccl/stream_bridge.h"
#include "ddp/nccl/work.h"

#include <ddp/process_group_nccl.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>

namespace ddp::nccl_backend {

class ProcessGroupNccl final : public ProcessGroup {
 public:
  ProcessGroupNccl(const std::shared_ptr<Store>& store, int rank, int size, int device, NcclOptions options);
  ~ProcessGroupNccl() override;

  std::string backend_name() const override { return "nccl"; }
  c10::Device device() const override { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device_)); }
  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) override;
  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) override;
  using ProcessGroup::broadcast;
  WorkPtr allgather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                    const CollectiveOptions& opts) override;
  WorkPtr reduce_scatter(at::Tensor& output, std::vector<at::Tensor>& inputs,
                         const ReduceScatterOptions& opts) override;
  WorkPtr barrier(const CollectiveOptions& opts) override;

 private:
  /// Issues NCCL calls (inside ncclGroupStart/End); returns the first failure or ncclSuccess.
  using Enqueue = std::function<ncclResult_t(ncclComm_t, cudaStream_t)>;
  struct Launch {
    std::string op;      ///< "allreduce"
    std::string detail;  ///< "sum, 3 tensors, 4.0 MiB" (debug log)
    std::chrono::milliseconds timeout;
    std::vector<at::Tensor> keep_alive;
    bool cpu_blocking_wait = false;
  };
  WorkPtr launch(Launch launch, const Enqueue& enqueue);

  /// Throws the group's first failure, reworded, when there was one.
  void check_usable() const;
  bool failed() const;
  /// Records the group's first failure, aborts the communicator and fails every pending op.
  void fail(FailureKind kind, const std::string& message);
  std::chrono::milliseconds op_timeout(std::chrono::milliseconds requested) const;
  void check_tensor(const std::string& op, const at::Tensor& t, size_t index, bool reduction) const;
  std::string where() const;  // "rank 1 of 4, cuda:1"

  void watchdog_loop();
  void watch_once();

  int device_;
  NcclOptions options_;
  std::unique_ptr<Communicator> comm_;
  std::shared_ptr<StreamBridge> bridge_;
  void* barrier_buffer_ = nullptr;  // one float on the device
  uint64_t seq_ = 0;                // under comm_->lock()

  mutable std::mutex error_mutex_;
  bool failed_ = false;
  FailureKind error_kind_ = FailureKind::kInternal;
  std::string error_message_;

  std::mutex pending_mutex_;
  std::condition_variable pending_cv_;
  std::deque<std::shared_ptr<OpState>> pending_;
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace ddp::nccl_backend

#pragma once
// Ordering between PyTorch's current CUDA stream and ours, without LibTorch's CUDA-only headers.
//
// Debian's LibTorch (and any CPU build) has no c10/cuda or ATen/cuda headers, so we reach PyTorch's
// streams through c10's device-guard interface, which CUDA LibTorch implements at run time:
//   - getStream(device) is the caller's current stream as a c10::Stream (its id is NOT a
//     cudaStream_t for PyTorch's own streams, so we never decode it);
//   - record(&event, stream, ...) creates/records a cudaEvent_t on that stream: ours can wait on it;
//   - block(event, stream) makes that stream wait on a cudaEvent_t we recorded on ours.
// Our stream, created here with the CUDA runtime, goes the other way: a c10::Stream whose id is the
// cudaStream_t itself is how LibTorch encodes "external" streams (getStreamFromExternal), which is
// what the caching allocator's recordStream needs.

#include <ATen/core/Tensor.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <cuda_runtime_api.h>

namespace ddp::nccl_backend {

/// The process-wide stream NCCL work runs on for `device` (created once, never destroyed: the
/// caching allocator may record events on it until the process ends, as on PyTorch's pool streams).
cudaStream_t collective_stream(int device);

/// Sets the calling thread's current CUDA device for the scope, restoring it afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

class StreamBridge {
 public:
  /// Requires LibTorch's CUDA guard to be registered (see cuda_guard_registered()).
  /// `record_streams`: record_on_ours() tells the caching allocator (detail::nccl_record_streams_from_env).
  StreamBridge(int device, cudaStream_t ours, bool record_streams);
  ~StreamBridge();
  StreamBridge(const StreamBridge&) = delete;
  StreamBridge& operator=(const StreamBridge&) = delete;

  /// Our stream waits for everything queued so far on the calling thread's current stream.
  /// Not thread-safe (one reusable event): callers serialize.
  void ours_wait_for_caller();
  /// The calling thread's current stream waits for `event` (recorded on ours).
  void caller_wait_for(cudaEvent_t event) const;
  /// Tells the caching allocator `tensor`'s memory is in use on our stream (LibTorch 2.x; a no-op
  /// when constructed with record_streams false, i.e. DDP_NCCL_RECORD_STREAMS=0 or
  /// TORCH_NCCL_AVOID_RECORD_STREAMS=1, or where the external-stream encoding is unknown).
  void record_on_ours(const at::Tensor& tensor) const;

  int device() const { return device_; }
  cudaStream_t stream() const { return ours_; }

 private:
  const c10::impl::DeviceGuardImplInterface* impl_;  // LibTorch's CUDA guard (leaked by design)
  int device_;
  cudaStream_t ours_;
  void* caller_event_ = nullptr;  // a cudaEvent_t LibTorch creates on first record()
  bool record_streams_;
};

/// True when LibTorch registered a CUDA device-guard implementation (a CUDA build of LibTorch).
bool cuda_guard_registered();

}  // namespace ddp::nccl_backend

#include "ddp/nccl/stream_bridge.h"

#include "ddp/nccl/errors.h"

#include <c10/core/Storage.h>
#include <torch/version.h>

#include <array>
#include <cstdint>
#include <mutex>

namespace ddp::nccl_backend {
namespace {

constexpr int kMaxDevices = 64;

c10::Device cuda_device(int index) {
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

bool cuda_guard_registered() { return c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA); }

cudaStream_t collective_stream(int device) {
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  if (device < 0 || device >= kMaxDevices)
    throw std::out_of_range("CUDA device index " + std::to_string(device) + " out of range");
  std::call_once(once[device], [device] {
    DeviceScope scope(device);
    // Non-blocking: no implicit ordering with the legacy default stream; all ordering is explicit.
    check_cuda(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking),
               "creating the NCCL stream on cuda:" + std::to_string(device));
  });
  return streams[device];
}

DeviceScope::DeviceScope(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

DeviceScope::~DeviceScope() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

StreamBridge::StreamBridge(int device, cudaStream_t ours, bool record_streams)
    : impl_(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)),
      device_(device),
      ours_(ours),
      record_streams_(record_streams) {}

StreamBridge::~StreamBridge() {
  if (caller_event_) impl_->destroyEvent(caller_event_, static_cast<c10::DeviceIndex>(device_));
}

void StreamBridge::ours_wait_for_caller() {
  c10::Stream caller = impl_->getStream(cuda_device(device_));
  impl_->record(&caller_event_, caller, static_cast<c10::DeviceIndex>(device_),
                c10::EventFlag::PYTORCH_DEFAULT);
  // cudaStreamWaitEvent captures the event's state now, so re-recording it for the next operation
  // does not disturb this wait.
  check_cuda(cudaStreamWaitEvent(ours_, static_cast<cudaEvent_t>(caller_event_), 0),
             "making the NCCL stream wait for the caller's stream");
}

void StreamBridge::caller_wait_for(cudaEvent_t event) const {
  c10::Stream caller = impl_->getStream(cuda_device(device_));
  impl_->block(static_cast<void*>(event), caller);
}

void StreamBridge::record_on_ours(const at::Tensor& tensor) const {
#if TORCH_VERSION_MAJOR >= 2
  // LibTorch 2.x decodes a stream id with the low bit clear (and non-zero) as an external
  // cudaStream_t (c10/cuda/CUDAStream.h); stream handles are pointers, so always aligned.
  if (!record_streams_) return;
  auto id = static_cast<c10::StreamId>(reinterpret_cast<std::intptr_t>(ours_));
  if (id == 0 || (id & 1) != 0) return;
  c10::Stream ours(c10::Stream::UNSAFE, cuda_device(device_), id);
  const c10::Storage& storage = tensor.storage();
  impl_->recordDataPtrOnStream(storage.data_ptr(), ours);
#else
  // Older LibTorch encodes ids differently; the Work keeps the tensors alive until the collective
  // finished instead (which it always does), so nothing is lost.
  (void)tensor;
#endif
}

}  // namespace ddp::nccl_backend

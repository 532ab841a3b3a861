#include "ddp/nccl/errors.h"

#include <ddp/errors.h>

namespace ddp::nccl_backend {

std::string nccl_error_text(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  // ncclGetLastError accepts a null communicator (the thread's last error).
  const char* last = ncclGetLastError(comm);
  if (last && *last) text += std::string(" (last NCCL error: ") + last + ")";
  return text;
}

FailureKind classify(ncclResult_t result) {
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return FailureKind::kConfig;
    case ncclSystemError:
    case ncclRemoteError:
      return FailureKind::kPeer;
    default:
      return FailureKind::kInternal;
  }
}

std::exception_ptr make_error(FailureKind kind, const std::string& message, int rank) {
  switch (kind) {
    case FailureKind::kConfig: return std::make_exception_ptr(ConfigError(message));
    case FailureKind::kPeer: return std::make_exception_ptr(PeerError(message, rank));
    case FailureKind::kTimeout: return std::make_exception_ptr(TimeoutError(message));
    case FailureKind::kInternal: break;
  }
  return std::make_exception_ptr(Error(message, kExitInternal));
}

void throw_error(FailureKind kind, const std::string& message, int rank) {
  std::rethrow_exception(make_error(kind, message, rank));
}

void check_nccl(ncclResult_t result, ncclComm_t comm, const std::string& what, int rank) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  throw_error(classify(result), what + ": " + nccl_error_text(result, comm), rank);
}

void check_cuda(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky-free error so later calls are not confused by it
  throw Error(what + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err), kExitInternal);
}

}  // namespace ddp::nccl_backend

#pragma once
// ncclResult_t / cudaError_t failures as ddp exceptions: the message says what we were doing, then
// NCCL's reason (ncclGetErrorString + ncclGetLastError) or CUDA's (cudaGetErrorName + String).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <exception>
#include <string>

// Nonblocking communicators, ncclInProgress, ncclCommFinalize and ncclGetLastError need 2.14 (2022).
#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "ddp's NCCL process group needs NCCL >= 2.14 (configure with -DDDP_WITH_NCCL=OFF to build without it)"
#endif

namespace ddp::nccl_backend {

/// How a failure is classified; decides the exception type (and so the exit code).
enum class FailureKind {
  kConfig,    ///< bad arguments / usage: ConfigError (permanent)
  kPeer,      ///< a peer or the network failed: PeerError (retryable)
  kTimeout,   ///< an operation exceeded its timeout: TimeoutError (retryable)
  kInternal,  ///< CUDA or NCCL internal failure: ddp::Error with kExitInternal
};

/// "ncclRemoteError: remote process exited or there was a network error (last error: ...)".
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);
FailureKind classify(ncclResult_t result);

/// A ready-to-throw exception of the class `kind` maps to.
std::exception_ptr make_error(FailureKind kind, const std::string& message, int rank);
[[noreturn]] void throw_error(FailureKind kind, const std::string& message, int rank);

/// Throws when `result` is a failure: "<what>: <nccl_error_text>".
void check_nccl(ncclResult_t result, ncclComm_t comm, const std::string& what, int rank);
/// Throws ddp::Error (internal) when `err` is a failure: "<what>: cudaErrorX: text".
void check_cuda(cudaError_t err, const std::string& what);

}  // namespace ddp::nccl_backend

#pragma once
// Typed errors and the exit-code contract.
//
// Every failure ddp reports is a ddp::Error carrying the process exit code its class maps to, so a
// trainer's main() can end with `return ddp::exit_code_for(e)` and Kubernetes' PyTorchJob
// `restartPolicy: ExitCode` does the right thing:
//   1-127  permanent: bad configuration or bad data, restarting will not help
//   >= 128 retryable: a lost peer, a timeout, an unreachable store, SIGTERM (143)
//
//   try { train(); } catch (const std::exception& e) { return ddp::report_and_exit_code(e); }

#include <ddp/export.h>
#include <exception>
#include <stdexcept>
#include <string>

namespace ddp {

/// Process exit codes. Permanent ones are below 128, retryable ones at or above.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,         ///< unexpected failure (a bug, or a LibTorch error we did not classify)
  kExitConfig = 2,           ///< bad flag, bad environment variable, bad input data
  kExitPeerLost = 200,       ///< a peer closed its connection or died mid-collective
  kExitTimeout = 201,        ///< an operation exceeded its timeout
  kExitStoreUnreachable = 202,  ///< the rendezvous store could not be reached before the deadline
  kExitTerminated = 143,     ///< stopped by SIGTERM after a clean checkpoint (128 + 15)
};

/// True for exit codes a restart may cure (>= 128), as PyTorchJob's ExitCode policy reads them.
inline bool is_retryable_exit_code(int code) { return code >= 128; }

/// Base of every ddp error.
class DDP_API Error : public std::runtime_error {
 public:
  Error(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// Bad configuration: a flag, an environment variable, mismatched models across ranks. Permanent.
class DDP_API ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(what, kExitConfig) {}
};

/// Bad input data: a missing, truncated or corrupt file, a malformed CSV row. Permanent.
class DDP_API DataError : public Error {
 public:
  explicit DataError(const std::string& what) : Error(what, kExitConfig) {}
};

/// A peer failed during a collective (connection closed, reset, process died). Retryable.
class DDP_API PeerError : public Error {
 public:
  PeerError(const std::string& what, int rank = -1, int peer = -1)
      : Error(what, kExitPeerLost), rank_(rank), peer_(peer) {}
  int rank() const noexcept { return rank_; }
  int peer() const noexcept { return peer_; }  ///< -1 when unknown

 private:
  int rank_, peer_;
};

/// An operation did not finish within its timeout. Retryable.
class DDP_API TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(what, kExitTimeout) {}
};

/// The store could not be reached, or answered with something we cannot parse. Retryable.
class DDP_API StoreError : public Error {
 public:
  explicit StoreError(const std::string& what, int exit_code = kExitStoreUnreachable)
      : Error(what, exit_code) {}
};

/// Exit code for any exception: ddp::Error's own, kExitInternal for everything else.
DDP_API int exit_code_for(const std::exception& e) noexcept;

/// Logs `e` (with this process's rank when known) to stderr and returns exit_code_for(e). When
/// TORCHELASTIC_ERROR_FILE is set (ddprun and torchrun set it for each worker), also records `e`
/// there in the JSON torch's @record writes ({"message": {"message": "<C++ type>: <what>",
/// "extraInfo": {"py_callstack": ..., "timestamp": "<unix s>"}}}), which the launcher's root-cause
/// report reads. The main() of every program ddp runs ends this way (docs/DDPRUN.md).
DDP_API int report_and_exit_code(const std::exception& e) noexcept;

}  // namespace ddp

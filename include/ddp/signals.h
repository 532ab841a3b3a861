#pragma once
// Graceful stop on SIGTERM / SIGINT (pod eviction, ddprun stopping its workers, Ctrl-C).
//
// The handlers only record the request (a lock-free atomic store: async-signal-safe); the trainer
// polls it between steps, finishes the current step, writes a checkpoint and exits 143 (SIGTERM) or
// 130 (SIGINT). A second signal of the same kind ends the process at once with that code.
//
//   ddp::install_stop_handlers();
//   for (...) {
//     train_step();
//     if (ddp::stop_requested_any(*pg)) {   // collective: all ranks stop after the same step
//       ckpt.save(*net, &optimizer, progress);
//       return ddp::stop_exit_code();
//     }
//   }

#include <memory>

namespace ddp {

class ProcessGroup;

/// Installs the SIGTERM and SIGINT handlers (idempotent; SA_RESTART, so blocking calls continue).
void install_stop_handlers();

/// True once SIGTERM or SIGINT arrived (or request_stop() was called) in this process.
bool stop_requested() noexcept;

/// The signal that asked us to stop (SIGTERM, SIGINT), or 0.
int stop_signal() noexcept;

/// 128 + stop_signal(): 143 after SIGTERM, 130 after SIGINT; 143 when no signal arrived.
int stop_exit_code() noexcept;

/// Records a stop request as if `signal` had arrived (tests, or a trainer's own reasons).
void request_stop(int signal) noexcept;

/// Forgets a recorded request (tests).
void clear_stop_request() noexcept;

/// Collective: true on every rank when any rank of `pg` has a stop request, so all ranks stop after
/// the same step. One allreduce(max) of one element (on CUDA for an NCCL group).
bool stop_requested_any(ProcessGroup& pg);

}  // namespace ddp

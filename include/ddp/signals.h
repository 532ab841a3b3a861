#pragma once
// Graceful stop on SIGTERM / SIGINT (pod eviction, ddprun stopping its workers, Ctrl-C).
//
// The handlers only record the request (a lock-free atomic store: async-signal-safe); the trainer
// polls it between steps, finishes the current step, writes a checkpoint and exits 143 (SIGTERM) or
// 130 (SIGINT). A second signal of the same kind ends the process at once with that code, except a
// repeat of the parent-death signal from a launcher that died (docs/DDPRUN.md).
//
//   ddp::install_stop_handlers();
//   ddp::StopVote stop(*pg);
//   for (...) {
//     train_step();
//     if (stop.poll()) {                    // collective: all ranks stop after the same step
//       ckpt.save(*net, &optimizer, progress);
//       return ddp::stop_exit_code();
//     }
//   }

#include <ddp/export.h>
#include <chrono>
#include <cstdint>
#include <memory>

namespace ddp {

class ProcessGroup;

/// Installs the SIGTERM and SIGINT handlers (idempotent; SA_RESTART, so blocking calls continue)
/// and ignores SIGPIPE, so a write to a console nobody reads any more (the launcher was killed)
/// fails with EPIPE instead of ending the process before its checkpoint.
DDP_API void install_stop_handlers();

/// True once SIGTERM or SIGINT arrived (or request_stop() was called) in this process.
DDP_API bool stop_requested() noexcept;

/// The signal that asked us to stop (SIGTERM, SIGINT), or 0.
DDP_API int stop_signal() noexcept;

/// 128 + stop_signal(): 143 after SIGTERM, 130 after SIGINT; 143 when no signal arrived.
DDP_API int stop_exit_code() noexcept;

/// Records a stop request as if `signal` had arrived (tests, or a trainer's own reasons).
DDP_API void request_stop(int signal) noexcept;

/// Forgets a recorded request (tests).
DDP_API void clear_stop_request() noexcept;

/// Collective: true on every rank when any rank of `pg` has a stop request, so all ranks stop after
/// the same step. One allreduce(max) of one element (on CUDA for an NCCL group), waited for.
DDP_API bool stop_requested_any(ProcessGroup& pg);

/// stop_requested_any() for a training loop, at a fraction of its cost. poll() votes only every
/// `interval` calls, sized so that votes are about `vote_every` apart (1 when steps are slower),
/// and never waits: a vote point starts a vote on this rank's flag and reads the outcome of the
/// previous vote point's, long finished (what a vote at every step costs: docs/CHECKPOINTS.md).
/// Every rank gets the same answer from the same poll():
/// the interval comes from the votes themselves (the slowest rank's step time). A signal is acted
/// on within two intervals: about 2 x vote_every, or the next step when steps are slower. Like any
/// collective, every rank must call poll() at the same points of its loop.
class DDP_API StopVote {
 public:
  /// `vote_every` 0: vote at every poll (tests).
  explicit StopVote(ProcessGroup& pg, std::chrono::milliseconds vote_every = std::chrono::milliseconds(100));
  /// Waits for the vote still in flight (its tensor must outlive it); errors are the group's to report.
  ~StopVote();
  StopVote(const StopVote&) = delete;
  StopVote& operator=(const StopVote&) = delete;

  bool poll();

 private:
  struct Pending;
  ProcessGroup& pg_;
  const std::chrono::milliseconds vote_every_;
  int64_t interval_ = 1;      // polls between vote points, the same on every rank
  int64_t since_vote_ = 0;    // polls since the last vote point
  std::chrono::steady_clock::time_point last_vote_;
  std::unique_ptr<Pending> pending_;
};

}  // namespace ddp

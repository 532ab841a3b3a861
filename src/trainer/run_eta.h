#pragma once
// How long this process has trained and how long the run has left, for the progress line and the
// train records of reporter.h.
//
//   RunEta eta;                                  // the steady clock; RunEta(fake_clock) in tests
//   eta.start();                                 // when training starts or resumes
//   RunTime t = eta.at(global_step, steps_left(point, max_steps));
//   format_duration(t.elapsed_s);                // "1:23", "1:02:03"
//
// Elapsed counts from start(), so after a resume it is this process's time, not the run's since its
// first start: the checkpoint carries no wall time, since the gap between a crash and the restart
// (rescheduling, another node) was nobody's training and would make the sum meaningless.
// The ETA is the steps left over the mean rate since the first progress point. Not since start():
// the first interval carries the start-up (the loader's first batches, allocator and kernel warm-up)
// and would skew the estimate for the whole run. Not the last interval's rate: one slow interval
// (an evaluation, a checkpoint, a noisy neighbour) would make it jump. Once an epoch has passed the
// mean includes the evaluation between epochs, which the remaining epochs will pay too.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ddp::trainer {

struct RunTime {
  double elapsed_s = 0;          ///< since start()
  std::optional<double> eta_s;   ///< to the last step; unknown until a rate is (at the second point)
};

class RunEta {
 public:
  /// Seconds on a monotonic clock, any origin.
  using Clock = std::function<double()>;

  /// The steady clock when `now` is empty. The run's time starts here, or at start().
  explicit RunEta(Clock now = {});

  /// Training starts (or resumes) now; forgets earlier points.
  void start();
  /// At the progress point that finished `global_step`, with `steps_left` steps to the run's end.
  RunTime at(int64_t global_step, int64_t steps_left);

 private:
  Clock now_;
  double start_ = 0;
  bool have_first_ = false;
  double first_time_ = 0;  ///< of the first point since start(): the rate is measured from it
  int64_t first_step_ = 0;
};

/// "m:ss" under an hour, "h:mm:ss" from an hour on (whole seconds, rounded); "?" when not finite
/// (or beyond 1e15 s);
/// a negative duration shows as "0:00".
std::string format_duration(double seconds);

}  // namespace ddp::trainer

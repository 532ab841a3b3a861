#pragma once
// The c10d rendezvous's keep-alive: every node of a round bumps its counter in the store every
// keep_alive_interval, and watches the others'. A node whose counter has not moved for
// keep_alive_interval x keep_alive_max_attempt (torch's defaults: 5 s x 3) is taken as lost.
//
// Torch's agents use the same two settings to drop a node that died while a round was forming; a
// node lost while its workers run is left to the workers' collectives there. ddprun acts on both:
// a node that died right after joining a round, or that went silent mid-run (a partition, a frozen
// machine: no reset connection reaches its peers), costs the others one keep-alive timeout and a
// restart, not the trainers' collective --timeout (30 min by default).
//
// Keys: ddprun/rdzv/<round>/beat/<slot>, a counter.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ddp {
class Store;
}  // namespace ddp

namespace ddp::launcher {

class Heartbeats {
 public:
  using Clock = std::chrono::steady_clock;
  /// `base` is the round's key prefix ("ddprun/rdzv/<round>/"); every node gets a full timeout
  /// from `now` to send its first beat.
  Heartbeats(std::string base, int my_slot, int nnodes, std::chrono::milliseconds interval, int max_attempts,
             Clock::time_point now);

  /// Beats when an interval has passed since the last beat, and then looks at the others'
  /// counters: the slot of a node silent for the whole timeout, if any.
  std::optional<int> beat_and_check(Store& store, Clock::time_point now);

  std::chrono::milliseconds timeout() const { return interval_ * max_attempts_; }

 private:
  std::string base_;
  int my_slot_;
  std::chrono::milliseconds interval_;
  int max_attempts_;
  Clock::time_point next_beat_;
  std::vector<int64_t> seen_;                 ///< each slot's counter as last read
  std::vector<Clock::time_point> moved_at_;  ///< when it last changed (or the round began)
};

}  // namespace ddp::launcher

#include "ddp/launcher/heartbeats.h"

#include <ddp/store.h>

namespace ddp::launcher {

Heartbeats::Heartbeats(std::string base, int my_slot, int nnodes, std::chrono::milliseconds interval,
                       int max_attempts, Clock::time_point now)
    : base_(std::move(base)),
      my_slot_(my_slot),
      interval_(interval),
      max_attempts_(max_attempts),
      next_beat_(now),
      seen_(static_cast<size_t>(nnodes), -1),
      moved_at_(static_cast<size_t>(nnodes), now) {}

std::optional<int> Heartbeats::beat_and_check(Store& store, Clock::time_point now) {
  if (now < next_beat_) return std::nullopt;
  next_beat_ = now + interval_;
  store.add(base_ + "beat/" + std::to_string(my_slot_), 1);
  std::optional<int> lost;
  for (int k = 0; k < static_cast<int>(seen_.size()); ++k) {
    if (k == my_slot_) continue;
    const int64_t count = store.add(base_ + "beat/" + std::to_string(k), 0);
    if (count != seen_[k]) {
      seen_[k] = count;
      moved_at_[k] = now;
    } else if (!lost && now - moved_at_[k] >= timeout()) {
      lost = k;
    }
  }
  return lost;
}

}  // namespace ddp::launcher

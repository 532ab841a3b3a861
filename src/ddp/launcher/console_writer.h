#pragma once
// ddprun's console (its stdout or stderr) as a bounded queue drained by a thread of its own, so a
// reader that stalls (a full pipe, a suspended `ddprun ... | less`, a stuck log collector) never
// blocks the launcher's control loop: signals are still forwarded, workers still watched.
//
// When the queue holds `capacity` bytes, further lines are dropped and counted; once there is room
// again, a line "[ddprun]: <n> line(s) of worker output dropped ..." takes their place. The
// descriptor itself is left as it is (no O_NONBLOCK: it is shared with whoever started us).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ddp::launcher {

class ConsoleWriter {
 public:
  ConsoleWriter(int fd, const char* name, size_t capacity);
  /// Waits while the reader keeps taking output; gives up after 2 s without progress.
  ~ConsoleWriter();
  ConsoleWriter(const ConsoleWriter&) = delete;
  ConsoleWriter& operator=(const ConsoleWriter&) = delete;

  /// Queues one complete line (written with one write(2) when the reader keeps up). Never blocks;
  /// false when the line was dropped.
  bool write(std::string line);
  /// Lines dropped so far.
  uint64_t dropped() const;

  struct State;  // the queue, shared with the writing thread

 private:
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive us when stuck in write
};

}  // namespace ddp::launcher

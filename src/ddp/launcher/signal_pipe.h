#pragma once
// ddprun's own signals as readable events: the handlers write the signal number into a
// non-blocking self-pipe (async-signal-safe), which the monitor loop polls with the workers' output.
#include <vector>

namespace ddp::launcher {

class SignalPipe {
 public:
  /// Installs handlers for SIGTERM, SIGINT, SIGHUP, SIGQUIT (stop requests) and SIGCHLD (wake-up);
  /// ignores SIGPIPE. One instance per process.
  SignalPipe();
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  /// The fd to poll for POLLIN.
  int fd() const { return read_fd_; }
  /// Drains the pipe; returns the stop signals received since the last call (SIGCHLD is dropped).
  std::vector<int> take();

 private:
  int read_fd_ = -1;
};

}  // namespace ddp::launcher

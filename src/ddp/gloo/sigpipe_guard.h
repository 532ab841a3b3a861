#pragma once
// Gloo writes to its sockets with writev(), which raises SIGPIPE when the peer is gone, and
// SIGPIPE's default action ends the process: a dead peer would kill the survivors before they can
// report the PeerError. Threads inherit the signal mask of the thread that starts them, so every
// thread the Gloo group starts (Gloo's I/O loop, our operation threads) is started inside this
// guard and keeps SIGPIPE blocked; writes then fail with EPIPE instead. The caller's own mask and
// the process-wide disposition stay as they were.

#include <signal.h>

namespace ddp::gloo_backend {

class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  /// Drops a SIGPIPE raised meanwhile on this thread, then restores the caller's mask.
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t previous_;
  bool was_blocked_ = false;
};

}  // namespace ddp::gloo_backend

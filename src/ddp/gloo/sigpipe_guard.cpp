#include "ddp/gloo/sigpipe_guard.h"

#include <pthread.h>

#include <ctime>

namespace ddp::gloo_backend {

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &previous_);
  was_blocked_ = sigismember(&previous_, SIGPIPE) == 1;
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  if (was_blocked_) return;  // the caller blocks SIGPIPE itself: leave everything as it is
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  timespec zero{0, 0};
  while (sigtimedwait(&pipe, nullptr, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

}  // namespace ddp::gloo_backend

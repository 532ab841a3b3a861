// Graceful-stop flag set from SIGTERM / SIGINT handlers.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "ddp/checkpoint/collective_device.h"

namespace ddp {
namespace {

// The only state the handler touches: a lock-free atomic, so the handler is async-signal-safe.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the stop flag must be lock-free in a signal handler");

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig) && expected == sig) {
    // A second signal of the same kind: the user (or an operator) insists. _exit is async-signal-safe.
    _exit(128 + sig);
  }
}

}  // namespace

void install_stop_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGTERM, SIGINT}) {
      if (sigaction(sig, &sa, nullptr) != 0)
        throw Error("installing the handler for signal " + std::to_string(sig) + " failed", kExitInternal);
    }
  });
}

bool stop_requested() noexcept { return g_stop_signal.load() != 0; }

int stop_signal() noexcept { return g_stop_signal.load(); }

int stop_exit_code() noexcept {
  int sig = g_stop_signal.load();
  return 128 + (sig ? sig : SIGTERM);
}

void request_stop(int signal) noexcept {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, signal);
}

void clear_stop_request() noexcept { g_stop_signal.store(0); }

bool stop_requested_any(ProcessGroup& pg) {
  // The largest signal number wins, so every rank also reports the same exit code.
  int64_t sig = detail::allreduce_max_int64(pg, g_stop_signal.load());
  if (sig > 0) g_stop_signal.store(static_cast<int>(sig));
  return sig > 0;
}

}  // namespace ddp

// Graceful-stop flag set from SIGTERM / SIGINT handlers.
#include <ddp/errors.h>
#include <ddp/process_group.h>
#include <ddp/signals.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include <ATen/Functions.h>

#include "util/collectives.h"

namespace ddp {
namespace {

// The only state the handler touches: a lock-free atomic, so the handler is async-signal-safe.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "the parent pid is read in a signal handler");
static_assert(std::atomic<int>::is_always_lock_free, "the stop flag must be lock-free in a signal handler");

// Our parent when the handlers were installed (ddprun, torchrun's agent, a shell).
std::atomic<pid_t> g_parent{0};

extern "C" void on_stop_signal(int sig, siginfo_t* info, void*) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig) && expected == sig) {
    // The kernel sends the parent-death signal (PR_SET_PDEATHSIG, which ddprun sets) each time a
    // thread of our parent exits while it is the thread we belong to: a launcher killed with several
    // threads alive hands us from thread to thread, SIGTERM each time, all from the launcher's pid
    // and while getppid() may still name it. Such a repeat is not someone insisting and must not cut
    // the checkpoint short. A launcher never insists with a second SIGTERM (ddprun and torchrun
    // escalate to SIGKILL), so no repeat sent from our parent's pid counts.
    if (info && info->si_code == SI_USER && info->si_pid == g_parent.load()) return;
    // A second signal of the same kind: the user (or an operator) insists. _exit is async-signal-safe.
    _exit(128 + sig);
  }
}

}  // namespace

void install_stop_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_parent.store(::getppid());
    struct sigaction sa {};
    sa.sa_sigaction = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    for (int sig : {SIGTERM, SIGINT}) {
      if (sigaction(sig, &sa, nullptr) != 0)
        throw Error("installing the handler for signal " + std::to_string(sig) + " failed", kExitInternal);
    }
    // A stopping process must get to its checkpoint. When the launcher was killed, the pipes that
    // were our stdout and stderr have no reader: with SIGPIPE's default action the first log line
    // after the stop signal would end us (exit 141) before the save. Ignored, such a write fails
    // with EPIPE, the line is lost, and the checkpoint is written.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    if (sigaction(SIGPIPE, &ignore, nullptr) != 0)
      throw Error("ignoring SIGPIPE failed", kExitInternal);
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

namespace {

// The largest signal number wins, so every rank also reports the same exit code.
bool adopt_vote(int64_t sig) {
  if (sig > 0) g_stop_signal.store(static_cast<int>(sig));
  return sig > 0;
}

}  // namespace

bool stop_requested_any(ProcessGroup& pg) { return adopt_vote(util::allreduce_max_int64(pg, g_stop_signal.load())); }

struct StopVote::Pending {
  std::vector<at::Tensor> vote;  // {signal, microseconds per poll} on the collective device
  WorkPtr work;
};

StopVote::StopVote(ProcessGroup& pg, std::chrono::milliseconds vote_every)
    : pg_(pg), vote_every_(vote_every), last_vote_(std::chrono::steady_clock::now()) {}

StopVote::~StopVote() {
  if (!pending_) return;
  try {
    pending_->work->wait();
  } catch (...) {
    // The group already failed; the caller is on its way out with that error.
  }
}

bool StopVote::poll() {
  if (++since_vote_ < interval_) return false;
  const auto now = std::chrono::steady_clock::now();
  const int64_t us_per_poll =
      std::chrono::duration_cast<std::chrono::microseconds>(now - last_vote_).count() / since_vote_;
  since_vote_ = 0;
  last_vote_ = now;

  std::unique_ptr<Pending> previous = std::move(pending_);
  pending_ = std::make_unique<Pending>();
  at::Tensor mine = at::tensor({static_cast<int64_t>(g_stop_signal.load()), us_per_poll}, at::kLong);
  pending_->vote = {util::to_group_device(mine, pg_)};
  pending_->work = pg_.allreduce(pending_->vote, AllreduceOptions().op(ReduceOp::kMax));
  if (!previous) return false;  // the first vote has no outcome yet, on every rank

  previous->work->wait();
  at::Tensor outcome = previous->vote[0].cpu();
  const int64_t slowest_us = std::max<int64_t>(1, outcome[1].item<int64_t>());
  const int64_t target_us = std::chrono::duration_cast<std::chrono::microseconds>(vote_every_).count();
  interval_ = std::clamp<int64_t>(target_us / slowest_us, 1, 10000);
  return adopt_vote(outcome[0].item<int64_t>());
}

}  // namespace ddp

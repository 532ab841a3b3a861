#include "ddp/gloo/shm_group.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <ctime>
#include <new>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DDP_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define DDP_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define DDP_CPU_RELAX() ((void)0)
#endif

#include "ddp/gloo/exchange.h"

namespace ddp::gloo_backend {
namespace {

constexpr uint64_t kSegmentMagic = 0x4444502d53484d31ull;  // "DDP-SHM1"
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kControlBytes = 256;
constexpr size_t kSignatureBytes = 64;
// A wait spins this long: a member that is already on its way arrives within a microsecond or two.
constexpr std::chrono::microseconds kSpin(2);
// Then it yields the core until this long has passed, then sleeps on the futex. Yielding is what
// keeps a busy host fast: when the member waited for (or a compute thread) shares this core, it
// runs at once, where spinning would hold the core and a futex sleep pays two context switches
// per piece. With one core busy with another process, a 64 MiB allreduce of 2 ranks took 20-26 ms
// this way against 36-44 ms with a 20 us spin then sleep, and 94-128 ms with a 300 us pure spin
// (docs/PERFORMANCE.md, "Shared memory").
//
// When every core is busy that loses: the member waited for gets a core only when another
// process's time slice ends, a yielding waiter stays runnable and competes for the same slices, and
// each sync point pays a slice (2 ranks, 64 KiB allreduce: 0.19x torch's Gloo with a busy loop on
// each core, issue 24). A futex sleep gets the kernel's wakeup preference instead. A sched_yield
// that returns after kSlowYield or more says another process had this core: the group stops
// yielding (yield_budget_ = 0) and sleeps, and every kProbeEvery sleeping waits it tries a short
// yield again (kYieldStep), which each wait that ends in a quick yield doubles back up to kYield.
// Whether a wait is long says nothing here: a slow peer on a quiet host is still best yielded to.
constexpr std::chrono::microseconds kYield(300);
constexpr std::chrono::microseconds kYieldStep(8);
constexpr std::chrono::microseconds kSlowYield(50);
constexpr unsigned kProbeEvery = 256;
// A sleeping wait wakes at least this often to look at its deadline and the abort flag.
constexpr int kSleepSliceMs = 10;

struct Header {
  uint64_t magic;
  uint64_t nonce;
  uint32_t capacity;
  uint32_t reserved;
  uint64_t piece_bytes;
  alignas(64) std::atomic<uint32_t> failed;  // 1 + the global rank that failed, 0 while healthy
};
static_assert(sizeof(Header) <= kHeaderBytes, "header");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain 32-bit atomics");

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  // Not FUTEX_PRIVATE: the word lives in memory shared with other processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Counters wrap after 2^32 sync points; compare by difference.
bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

}  // namespace

struct ShmGroup::Control {
  alignas(64) std::atomic<uint32_t> seq;  // sync points this member has reached
  std::atomic<uint32_t> sleepers;         // members asleep on seq
  std::atomic<uint32_t> left;             // 1 once the member destroyed its group (seq is final)
  alignas(64) uint8_t signatures[2][kSignatureBytes];
};

size_t ShmGroup::segment_bytes(int members, size_t piece_bytes) {
  return kHeaderBytes + align_up(kControlBytes * members, 4096) + 2 * piece_bytes * members;
}

void ShmGroup::format(SharedMemory& memory, int members, size_t piece_bytes, uint64_t nonce) {
  auto* h = new (memory.data()) Header{};
  h->nonce = nonce;
  h->capacity = static_cast<uint32_t>(members);
  h->piece_bytes = piece_bytes;
  h->failed.store(0);
  for (int m = 0; m < members; ++m) {
    auto* c = new (memory.data() + kHeaderBytes + kControlBytes * m) Control{};
    c->seq.store(0);
    c->sleepers.store(0);
    c->left.store(0);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  h->magic = kSegmentMagic;
}

void ShmGroup::verify(const SharedMemory& memory, uint64_t nonce) {
  if (memory.size() < kHeaderBytes) throw ShmUnavailable("the received segment is too small");
  const auto* h = reinterpret_cast<const Header*>(memory.data());
  if (h->magic != kSegmentMagic || h->nonce != nonce)
    throw ShmUnavailable("the received segment is not the one the leader announced");
  if (memory.size() < segment_bytes(static_cast<int>(h->capacity), h->piece_bytes))
    throw ShmUnavailable("the received segment is smaller than its header says");
}

ShmGroup::ShmGroup(SharedMemory memory, std::vector<int> ranks, int index)
    : memory_(std::move(memory)), ranks_(std::move(ranks)), index_(index) {
  const auto* h = reinterpret_cast<const Header*>(memory_.data());
  capacity_ = static_cast<int>(h->capacity);
  piece_bytes_ = h->piece_bytes;
  if (size() > capacity_ || index_ < 0 || index_ >= size())
    throw ShmUnavailable("the segment has room for " + std::to_string(capacity_) + " ranks, not " +
                         std::to_string(size()));
}

ShmGroup::Control& ShmGroup::control(int member) const {
  static_assert(sizeof(Control) <= kControlBytes, "control block");
  return *reinterpret_cast<Control*>(memory_.data() + kHeaderBytes + kControlBytes * member);
}

uint8_t* ShmGroup::slot(int member, int buffer) const {
  return memory_.data() + kHeaderBytes + align_up(kControlBytes * capacity_, 4096) +
         (2 * static_cast<size_t>(member) + buffer) * piece_bytes_;
}

uint8_t* ShmGroup::signature(int member, int buffer) const { return control(member).signatures[buffer]; }

void ShmGroup::begin(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout) {
  deadline_ = deadline;
  timeout_ = timeout;
}

void ShmGroup::publish() {
  Control& me = control(index_);
  me.seq.store(++seq_, std::memory_order_seq_cst);
  if (me.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake(&me.seq);
}

void ShmGroup::sync() {
  publish();
  for (int m = 0; m < size(); ++m)
    if (m != index_) wait_for(m);
}

void ShmGroup::check(int member) {
  // What we wait for has arrived: no failure elsewhere changes that. A rank that saw every
  // signature may find the mismatch and mark the group failed (fail()) before a slower member
  // looked at its count; that member must still read the signatures and report the mismatch.
  Control& c = control(member);
  if (reached(c.seq.load(std::memory_order_acquire), seq_)) return;
  if (aborted_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(abort_mu_);
    throw TransportFailure(TransportFailure::Kind::kPeerLost, abort_peer_, abort_cause_);
  }
  auto* h = reinterpret_cast<Header*>(memory_.data());
  uint32_t failed = h->failed.load(std::memory_order_acquire);
  if (failed != 0) {
    int who = static_cast<int>(failed) - 1;
    throw TransportFailure(TransportFailure::Kind::kPeerLost, who,
                           "rank " + std::to_string(who) + " left the shared-memory collective (its operation failed)");
  }
  // Its final count is published before the mark: a member that left after reaching this point
  // was not what we waited for.
  if (c.left.load(std::memory_order_acquire) != 0 && !reached(c.seq.load(std::memory_order_acquire), seq_))
    throw TransportFailure(TransportFailure::Kind::kPeerLost, ranks_[member],
                           "rank " + std::to_string(ranks_[member]) +
                               " destroyed its process group while this operation waited for it (it was given "
                               "fewer operations)");
  if (std::chrono::steady_clock::now() >= deadline_) throw_stuck(member);
}

void ShmGroup::throw_stuck(int member) {
  throw TransportFailure(TransportFailure::Kind::kTimeout, ranks_[member],
                         "no progress within the " + std::to_string(timeout_.count()) +
                             " ms timeout waiting for rank " + std::to_string(ranks_[member]) + " over shared memory");
}

void ShmGroup::wait_for(int member) {
  Control& c = control(member);
  const uint32_t target = seq_;
  if (reached(c.seq.load(std::memory_order_acquire), target)) return;
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    DDP_CPU_RELAX();
    if (reached(c.seq.load(std::memory_order_acquire), target)) return;
    if ((i & 15) == 0 && std::chrono::steady_clock::now() - start >= kSpin) break;
  }
  for (;;) {
    check(member);
    const auto before = std::chrono::steady_clock::now();
    if (before - start >= kSpin + yield_budget_) break;
    sched_yield();
    const bool slow = std::chrono::steady_clock::now() - before >= kSlowYield;
    if (slow) yield_budget_ = std::chrono::microseconds(0);  // another process had this core
    if (reached(c.seq.load(std::memory_order_acquire), target)) {
      if (!slow) grow_yield();
      return;
    }
    if (slow) break;
  }
  // Now and then a sleeping group tries yielding again: the other process may have gone.
  if (yield_budget_.count() == 0 && ++sleeps_since_probe_ >= kProbeEvery) {
    sleeps_since_probe_ = 0;
    yield_budget_ = kYieldStep;
  }
  for (;;) {
    c.sleepers.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = c.seq.load(std::memory_order_seq_cst);
    if (!reached(v, target)) futex_wait(&c.seq, v, kSleepSliceMs);
    c.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(c.seq.load(std::memory_order_acquire), target)) return;
    check(member);
  }
}

void ShmGroup::grow_yield() {
  yield_budget_ = std::min(kYield, std::max(yield_budget_ * 2, std::chrono::microseconds(kYieldStep)));
}

void ShmGroup::wake_all() {
  for (int m = 0; m < size(); ++m) futex_wake(&control(m).seq);
}

void ShmGroup::fail() {
  auto* h = reinterpret_cast<Header*>(memory_.data());
  uint32_t none = 0;
  h->failed.compare_exchange_strong(none, static_cast<uint32_t>(ranks_[index_] + 1));
  wake_all();
}

void ShmGroup::leave() {
  control(index_).left.store(1, std::memory_order_release);
  futex_wake(&control(index_).seq);  // sleepers waiting for us look again
}

void ShmGroup::abort(int peer, const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (aborted_) return;
    abort_peer_ = peer;
    abort_cause_ = cause;
    aborted_.store(true, std::memory_order_release);
  }
  wake_all();
}

}  // namespace ddp::gloo_backend

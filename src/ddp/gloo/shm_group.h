#pragma once
// The ranks of one host working in one shared segment: where each rank's data slots are, and the
// one synchronisation every shared-memory collective is built from.
//
// Layout: a header, one control block per member (its sync counter on a cache line of its own,
// and two 64-byte signature areas), then per member two data buffers of piece_bytes. Collectives
// move data in pieces; piece k uses buffer k % 2 of every slot (counted across operations), so a
// rank may write piece k + 1 while others still read piece k, and the sync of piece k + 1 tells it
// that everyone is done with piece k's buffer before piece k + 2 reuses it.
//
// sync() is a barrier over counters: each member bumps its own counter and waits until every other
// member's is as far. Waiting spins briefly, then sleeps on a futex in the segment (woken by the
// member that moves). A wait also ends, with TransportFailure, when the operation's deadline
// passes, when a member marks the segment failed (its operation failed: it will not come), when the
// member waited for has left (destroyed its group, so it will not come either), or when the
// PeerMonitor aborts the group (the TCP connection to a member broke: it died, even by SIGKILL,
// which leaves nothing in the segment to look at).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ddp/gloo/peer_monitor.h"
#include "ddp/gloo/shm_segment.h"

namespace ddp::gloo_backend {

class ShmGroup final : public Abortable {
 public:
  /// Bytes a segment for `members` ranks with `piece_bytes` buffers needs.
  static size_t segment_bytes(int members, size_t piece_bytes);
  /// Writes the header of a fresh (zeroed) segment: checked by every member on attach.
  static void format(SharedMemory& memory, int members, size_t piece_bytes, uint64_t nonce);
  /// Throws ShmUnavailable unless `memory` holds a segment formatted with `nonce`.
  static void verify(const SharedMemory& memory, uint64_t nonce);

  /// `ranks`: the global ranks of the members, ascending; this process is ranks[index].
  /// The segment may have been formatted for more members (some could not attach).
  ShmGroup(SharedMemory memory, std::vector<int> ranks, int index);

  int size() const { return static_cast<int>(ranks_.size()); }
  int index() const { return index_; }
  const std::vector<int>& ranks() const { return ranks_; }
  size_t piece_bytes() const { return piece_bytes_; }

  /// Starts an operation: its deadline and timeout bound every wait until the next begin().
  void begin(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);
  /// The buffer the next piece uses (0 or 1).
  int next_buffer() { return static_cast<int>(pieces_++ & 1); }
  /// Member `member`'s data buffer `buffer` (piece_bytes() bytes).
  uint8_t* slot(int member, int buffer) const;
  /// Member `member`'s 64-byte signature area for `buffer`.
  uint8_t* signature(int member, int buffer) const;
  /// Publishes that this rank reached the next sync point and waits until every member has.
  void sync();

  /// Marks the segment failed: every member's waits end now instead of at their deadline.
  void fail();
  /// Marks this member gone after its last operation: a member still waiting for it fails now.
  void leave();
  /// PeerMonitor: the connection to global rank `peer` failed.
  void abort(int peer, const std::string& cause) override;

 private:
  struct Control;
  Control& control(int member) const;
  void publish();
  void wait_for(int member);
  void grow_yield();
  [[noreturn]] void throw_stuck(int member);
  void check(int member);
  void wake_all();

  SharedMemory memory_;
  std::vector<int> ranks_;
  int index_;
  int capacity_;  // members the segment was formatted for
  size_t piece_bytes_;
  uint32_t seq_ = 0;      // sync points this rank has published
  uint64_t pieces_ = 0;   // pieces moved so far (buffer parity)
  std::chrono::microseconds yield_budget_{300};  // how long a wait yields before it sleeps (wait_for)
  unsigned sleeps_since_probe_ = 0;               // sleeping waits since yielding was last tried
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};
  std::atomic<bool> aborted_{false};
  std::mutex abort_mu_;
  int abort_peer_ = -1;
  std::string abort_cause_;
};

}  // namespace ddp::gloo_backend

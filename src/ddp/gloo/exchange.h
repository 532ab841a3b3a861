#pragma once
// Point-to-point messages of one collective over Gloo's transport, with waits that fail instead of
// hanging.
//
// Gloo 0.5's TCP pair wakes the buffers of operations still queued on a connection when that
// connection fails, but not a send or receive already half-way through the socket, so a peer that
// dies mid-transfer could leave a wait hanging until the timeout. Here every buffer belongs to the
// Exchange, and a PeerMonitor that finds a failed connection aborts the waits (abort()), which
// then throw TransportFailure naming the peer.

#include <ddp/errors.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddp/gloo/gloo_fwd.h"
#include "ddp/gloo/peer_monitor.h"

namespace ddp::gloo_backend {

class PeerDirectory;
class SignatureCheck;

/// How one of our own algorithms failed; translate_failure() turns it into PeerError/TimeoutError.
struct TransportFailure : std::runtime_error {
  enum class Kind { kPeerLost, kTimeout };
  TransportFailure(Kind kind, int peer, const std::string& what) : std::runtime_error(what), kind(kind), peer(peer) {}
  Kind kind;
  int peer;  ///< the rank whose connection failed, or that we waited for; -1 when unknown
};

/// What every operation passes to its Exchange.
struct OpEnv {
  std::shared_ptr<::gloo::Context> context;
  uint32_t tag = 0;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds timeout{0};
  const PeerDirectory* peers = nullptr;
  PeerMonitor* monitor = nullptr;
  /// The operation's signature check (op_signature.h): passed before the first send or wait, so
  /// receives may be posted early but no data leaves before every rank's call is known to match.
  SignatureCheck* gate = nullptr;
};

class Exchange final : public Abortable {
 public:
  using Buffer = ::gloo::transport::UnboundBuffer;

  /// `slot_prefix` keeps this algorithm's messages apart from other kinds (Gloo's use 0x01-0x08).
  /// `members`: the global ranks taking part, ascending, this rank among them (the leaders of a
  /// hierarchical collective); empty: every rank. rank(), size() and every peer argument below
  /// count within the members, so the algorithms run unchanged on a subset.
  Exchange(const OpEnv& env, uint8_t slot_prefix, std::vector<int> members = {});
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// A buffer over `bytes` at `ptr`, owned by this Exchange (valid until it is destroyed).
  Buffer* buffer(void* ptr, size_t bytes);

  /// Messages between two ranks on one `channel` are matched in order.
  void send(Buffer* buf, int peer, size_t offset, size_t bytes, uint8_t channel = 0);
  void recv(Buffer* buf, int peer, size_t offset, size_t bytes, uint8_t channel = 0);
  /// Block until one send/recv posted on `buf` completes; `peer` is whom it involves (for errors).
  /// Throw TransportFailure on a failed connection, an abort or the deadline.
  void wait_send(Buffer* buf, int peer);
  void wait_recv(Buffer* buf, int peer);

  /// Called by the PeerMonitor: the connection to `peer` (a global rank) failed with `cause`; every wait throws.
  void abort(int peer, const std::string& cause) override;

 private:
  int global(int peer) const { return members_.empty() ? peer : members_[peer]; }
  void wait(Buffer* buf, int peer, bool send);
  void pass_gate();
  [[noreturn]] void throw_aborted();
  std::chrono::milliseconds time_left() const;

  OpEnv env_;
  std::vector<int> members_;
  int rank_ = 0, size_ = 1;
  uint64_t slot_;
  std::mutex mu_;  // guards buffers_ and the abort details
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::atomic<bool> aborted_{false};
  int abort_peer_ = -1;
  std::string abort_cause_;
};

}  // namespace ddp::gloo_backend

#pragma once
// Turning Gloo's exceptions into ddp's typed errors.
//
// Gloo reports a lost peer as an IoException whose message holds the peer's socket address
// ("Connection closed by peer [10.0.0.2]:41234"), and a timeout as "Timed out waiting ...". We learn
// every peer's address from the rendezvous, so the error can name the peer's rank.

#include <ddp/errors.h>

#include <exception>
#include <vector>
#include <string>

namespace ddp::gloo_backend {

/// Gloo's address strings of the other ranks (as Gloo prints them in its errors), by rank.
class PeerDirectory {
 public:
  /// `gloo_str`: the exact text Gloo prints for one of the peer's addresses; `readable`:
  /// "10.0.0.2:41234". A rank may have several.
  void add(int rank, std::string gloo_str, std::string readable);
  /// The rank whose address appears in `message`, or -1.
  int find_in(const std::string& message) const;
  /// The readable address added last for `rank`, or "" when unknown.
  std::string readable(int rank) const;

 private:
  struct Entry {
    int rank;
    std::string gloo_str;
    std::string readable;
  };
  std::vector<Entry> entries_;
};

/// Who and what failed, for messages.
struct FailureContext {
  std::string op;   ///< "allreduce #12 (sum; float32 x 1024)"
  int rank = -1;
  int size = 0;
  long long timeout_ms = 0;
  /// The peer this rank was waiting on when the code knows it (our own algorithms), else -1.
  int tracked_peer = -1;
};

/// Gloo's message without its "[/path/file.cc:123] " source prefix.
std::string strip_gloo_location(const std::string& message);

/// A ddp error for the exception in flight: ddp::Error subclasses pass through unchanged, Gloo
/// timeouts become TimeoutError, other Gloo I/O failures PeerError naming the peer when known,
/// anything else an internal Error. Every message names the op and this rank.
std::exception_ptr translate_failure(std::exception_ptr error, const FailureContext& ctx,
                                     const PeerDirectory& peers);

/// What a failed group remembers so later operations can repeat the cause.
struct GroupFailure {
  enum class Kind { kPeer, kTimeout, kStore, kConfig, kOther } kind = Kind::kOther;
  std::string message;
  int peer = -1;
  int exit_code = kExitInternal;

  static GroupFailure from(std::exception_ptr error);
  /// The error a later operation `op` ends with: same type, message naming `op` plus the cause.
  std::exception_ptr later_op_error(const std::string& op, int rank) const;
};

}  // namespace ddp::gloo_backend

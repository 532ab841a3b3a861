#pragma once
// Checking that every rank issued the same collective before any of its data moves.
//
// A collective whose sizes differ across ranks is a program bug, but over Gloo's TCP transport it
// is worse than a wrong answer: a message longer than the receive posted for it throws inside
// Gloo's event-loop thread (std::terminate, exit 134), a shorter one completes the receive with
// stale bytes after it (a silently wrong result), and a different root or kind waits out the
// timeout. So each operation starts with a signature exchange: every rank sends a 64-byte
// signature (kind, reduce op, root, tensors, elements, bytes, dtypes and the fused layout) to every
// other rank and waits for theirs, and only then posts its data. All ranks see all signatures, so
// every rank reports the same ConfigError naming the operation, each distinct call and its ranks.
// The full-mesh exchange is also a barrier, so barrier() needs nothing else.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ddp/gloo/gloo_fwd.h"

namespace ddp::gloo_backend {

struct OpEnv;
class Exchange;

/// What one rank asked for in one operation; equal on every rank for a well-formed program.
struct OpSignature {
  enum class Kind : uint8_t { kAllreduce = 1, kBroadcast, kAllgather, kReduceScatter, kBarrier };
  Kind kind = Kind::kBarrier;
  uint8_t reduce_op = 0;  ///< ReduceOp as a number (allreduce, reduce_scatter), else 0
  int32_t root = -1;      ///< broadcast's root, else -1
  uint32_t tensors = 0;
  uint64_t elements = 0;  ///< per rank (allgather: the input; reduce_scatter: the output)
  uint64_t bytes = 0;
  uint64_t layout = 0;    ///< hash of the (dtype, elements) sequence the data moves in
  std::vector<c10::ScalarType> dtypes;  ///< distinct, in order of first appearance (at most 8 travel)

  /// Adds one fusion group / buffer of the data (dtype and element count) to elements, bytes, layout, dtypes.
  void add_part(c10::ScalarType dtype, int64_t numel);
  /// "allreduce (sum, 1 tensor, 12 elements, Float)".
  std::string describe() const;

  /// Equal when the data would move in the same messages (the tensor count may differ).
  bool operator==(const OpSignature& o) const;
  bool operator!=(const OpSignature& o) const { return !(*this == o); }
};

/// Fixed-size wire form (little-endian) and back; decode throws ConfigError on a malformed record.
constexpr size_t kOpSignatureBytes = 64;
void encode(const OpSignature& s, uint8_t out[kOpSignatureBytes]);
OpSignature decode(const uint8_t in[kOpSignatureBytes]);

/// Throws ConfigError "<op_name> on rank R does not match across ranks: ranks 0, 1 called ...; rank 2
/// called ..." unless every signature in `by_member` is equal; `ranks` are the members' global ranks.
void require_same_signatures(const std::vector<OpSignature>& by_member, const std::vector<int>& ranks, int my_rank,
                             const std::string& op_name);

/// One operation's signature exchange. The constructor posts the receives of every peer's signature
/// and the sends of ours (slot prefix `slot_prefix`) and returns; finish() waits for them and throws
/// ConfigError "<op_name> on rank R does not match across ranks: ..." when any differs. finish() runs
/// once (later calls return or rethrow at once); Exchanges whose OpEnv::gate points here call it
/// before their first send or wait, so the algorithm's receives are already posted (their
/// ready-to-receive notices travel with the signatures) but none of its data leaves unchecked.
/// Transport failures and the deadline end as TransportFailure, like the collectives themselves.
class SignatureCheck {
 public:
  SignatureCheck(const OpEnv& env, uint8_t slot_prefix, const OpSignature& mine, std::string op_name);
  ~SignatureCheck();
  SignatureCheck(const SignatureCheck&) = delete;
  SignatureCheck& operator=(const SignatureCheck&) = delete;
  void finish();

 private:
  std::unique_ptr<Exchange> ex_;
  OpSignature mine_;
  std::string op_name_;
  std::vector<uint8_t> all_;
  ::gloo::transport::UnboundBuffer* buf_ = nullptr;
  enum class State { kPosted, kPassed, kFailed } state_ = State::kPosted;
  std::exception_ptr failure_;
};

}  // namespace ddp::gloo_backend

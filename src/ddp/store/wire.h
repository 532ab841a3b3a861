#pragma once
// The c10d TCPStore wire format, both dialects, plus ddp's own token hello.
//
// Framing (torch/csrc/distributed/c10d/Utils.hpp): every request is one query-type byte followed by
// fields; integers are host-order (little-endian on every platform we run on); strings and byte
// vectors are a uint64 length then the bytes; key lists are a uint64 count then strings.
//
// Two numberings of the query byte exist:
//   kLegacy (c10d 1.x .. 2.0): SET=0 COMPARE_SET=1 GET=2 ADD=3 CHECK=4 WAIT=5 GETNUMKEYS=6
//                              WATCH_KEY=7 DELETE_KEY=8 APPEND=9 MULTI_GET=10 MULTI_SET=11 CANCEL_WAIT=12
//   kV2     (c10d 2.1 ..):     VALIDATE=0 SET=1 ... GETNUMKEYS=7 DELETE_KEY=8 APPEND=9 MULTI_GET=10
//                              MULTI_SET=11 CANCEL_WAIT=12 PING=13 QUEUE_PUSH=14 QUEUE_POP=15
//                              QUEUE_LEN=16 LIST_KEYS=17
// A kV2 client's first request is always VALIDATE (0) + uint32 0x3C85F7CE; that is how the server
// tells the dialects apart (a legacy SET whose key length ends in those 4 bytes would be ~1 GB).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace ddp::store {

enum class Dialect : uint8_t { kLegacy, kV2 };
const char* dialect_name(Dialect d);

/// Operations, independent of how a dialect numbers them.
enum class Op : uint8_t {
  kValidate, kSet, kCompareSet, kGet, kAdd, kCheck, kWait, kNumKeys, kWatchKey, kDeleteKey,
  kAppend, kMultiGet, kMultiSet, kCancelWait, kPing, kQueuePush, kQueuePop, kQueueLen, kListKeys,
};
const char* op_name(Op op);

/// The byte `dialect` uses for `op`, or nullopt when that dialect has no such query.
std::optional<uint8_t> op_code(Dialect dialect, Op op);
/// The op `dialect` means by `code`, or nullopt for an unknown byte.
std::optional<Op> op_from_code(Dialect dialect, uint8_t code);

constexpr uint32_t kValidationMagic = 0x3C85F7CE;
enum class CheckResponse : uint8_t { kReady = 0, kNotReady = 1 };
enum class WaitResponse : uint8_t { kStopWaiting = 0, kWaitCanceled = 1 };

// ddp's token hello (not part of c10d): 0xDD 'D' 'D' 'P' 'T' uint32 length, token bytes. c10d never
// sends a query byte above 31, so a c10d server closes the connection and a c10d client can never
// send it by accident. The server answers 0xDD 0x01 when accepted and closes the connection otherwise.
constexpr uint8_t kHelloByte = 0xDD;
constexpr char kHelloMagic[4] = {'D', 'D', 'P', 'T'};
constexpr uint8_t kHelloAccepted = 0x01;

// Limits the server enforces (a request over them closes that connection). c10d's libuv server
// caps keys at 8 KiB and values at 8 MiB; ours are looser so real c10d traffic always fits.
constexpr uint64_t kMaxKeyBytes = 64 * 1024;
constexpr uint64_t kMaxValueBytes = 64ull * 1024 * 1024;
constexpr uint64_t kMaxKeysPerRequest = 128 * 1024;
constexpr uint64_t kMaxTokenBytes = 4096;
/// Unparsed input one connection may buffer: one maximal value plus headroom for its keys.
constexpr size_t kMaxBufferedInput = kMaxValueBytes + 16 * 1024 * 1024;
/// Replies one connection may leave unread before the server gives up on it.
constexpr size_t kMaxBufferedOutput = 256ull * 1024 * 1024;

using Bytes = std::vector<uint8_t>;

/// Appends wire fields to a byte buffer.
class Writer {
 public:
  Writer& u8(uint8_t v) { buf_.push_back(v); return *this; }
  Writer& u32(uint32_t v) { return raw(&v, sizeof v); }
  Writer& u64(uint64_t v) { return raw(&v, sizeof v); }
  Writer& i64(int64_t v) { return raw(&v, sizeof v); }
  Writer& str(const std::string& s) { u64(s.size()); return raw(s.data(), s.size()); }
  Writer& bytes(const Bytes& b) { u64(b.size()); return raw(b.data(), b.size()); }
  Writer& raw(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), c, c + n);
    return *this;
  }
  Bytes& buffer() { return buf_; }
  Bytes take() { return std::move(buf_); }

 private:
  Bytes buf_;
};

/// Outcome of parsing from a partial buffer.
enum class ParseStatus { kOk, kNeedMore, kInvalid };

/// Reads wire fields from [data, data+size) without copying until a field is known to be complete.
/// Each read returns kNeedMore when the bytes are not there yet and kInvalid on a limit breach.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t consumed() const { return pos_; }
  size_t available() const { return size_ - pos_; }
  ParseStatus u8(uint8_t& v) { return fixed(&v, 1); }
  ParseStatus u32(uint32_t& v) { return fixed(&v, sizeof v); }
  ParseStatus u64(uint64_t& v) { return fixed(&v, sizeof v); }
  ParseStatus i64(int64_t& v) { return fixed(&v, sizeof v); }
  /// A length-prefixed field of at most `limit` bytes.
  ParseStatus str(std::string& out, uint64_t limit);
  ParseStatus bytes(Bytes& out, uint64_t limit);
  /// Why the last kInvalid happened.
  const std::string& error() const { return error_; }
  ParseStatus fail(std::string why) {
    error_ = std::move(why);
    return ParseStatus::kInvalid;
  }

 private:
  ParseStatus fixed(void* out, size_t n) {
    if (available() < n) return ParseStatus::kNeedMore;
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return ParseStatus::kOk;
  }
  /// A length-prefixed field, all there: [*begin, *begin + *n), consumed. On kNeedMore nothing is
  /// consumed, so the read can start again when more bytes arrive.
  ParseStatus field(uint64_t limit, const char* what, const uint8_t** begin, uint64_t* n);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string error_;
};

/// Parses the ASCII decimal integer add() keeps (like std::stoll: leading spaces, optional sign,
/// digits; anything after the digits is ignored). nullopt when there are no digits or it overflows.
std::optional<int64_t> parse_counter(const Bytes& value);

}  // namespace ddp::store

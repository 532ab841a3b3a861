#include "ddp/store/client.h"

#include <cstring>

#include <ddp/errors.h>
#include <ddp/logging.h>

namespace ddp::store {
namespace {

/// c10d's TCPStore puts "/" in front of every user key on the wire (its keyPrefix_).
std::string wire_key(const std::string& key) { return "/" + key; }

std::string quote(const std::string& key) { return "'" + key + "'"; }

/// How long each step of the dialect probe may take. A live server answers in microseconds.
constexpr std::chrono::seconds kProbeTimeout{10};
constexpr std::chrono::seconds kCancelTimeout{10};

}  // namespace

std::string quote_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    if (i == 16) {
      out += "... (" + std::to_string(keys.size()) + " keys)";
      break;
    }
    out += quote(keys[i]);
  }
  return out;
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  op_timeout_ = options_.connect_timeout();
  handshake();
}

Fd Client::open_connection(Clock::time_point deadline) {
  Fd fd = connect_with_retry(options_.host(), options_.port(), deadline);
  if (options_.token().empty()) return fd;
  Writer w;
  w.u8(kHelloByte).raw(kHelloMagic, 4).u32(static_cast<uint32_t>(options_.token().size()));
  w.raw(options_.token().data(), options_.token().size());
  auto hs_deadline = Clock::now() + kProbeTimeout;
  int err = 0;
  uint8_t reply[2] = {0, 0};
  IoStatus s = send_all(fd.get(), w.buffer().data(), w.buffer().size(), hs_deadline, &err);
  if (s == IoStatus::kOk) s = recv_exact(fd.get(), reply, 2, hs_deadline, &err);
  if (s == IoStatus::kOk && reply[0] == kHelloByte && reply[1] == kHelloAccepted) return fd;
  throw StoreError("store at " + address() +
                   " refused this client's token (DDP_STORE_TOKEN): the token differs from the "
                   "server's, or the server is a PyTorch c10d store, which has no token support" +
                   (s == IoStatus::kTimeout ? " (no answer within 10 s)" : ""));
}

void Client::handshake() {
  const auto deadline = deadline_after(options_.connect_timeout());
  int err = 0;

  // 1. The c10d >= 2.1 numbering: VALIDATE, GETNUMKEYS, then a CHECK of 128 empty keys. Every v2
  //    server (classic or libuv backend, with or without PING) answers an int64 and one byte and
  //    keeps the connection. A c10d 1.x/2.0 server reads the same bytes as a SET whose key length
  //    is 0x0080'0507'3C85'F7CE (~36 PB): its allocation fails at once and the server closes just
  //    this connection (verified against torch 1.13, which keeps serving everyone else).
  {
    fd_ = open_connection(deadline);
    constexpr uint64_t kProbeKeys = 128;  // its low byte lands in the legacy key length
    Writer w;
    w.u8(*op_code(Dialect::kV2, Op::kValidate)).u32(kValidationMagic);
    w.u8(*op_code(Dialect::kV2, Op::kNumKeys));
    w.u8(*op_code(Dialect::kV2, Op::kCheck)).u64(kProbeKeys);
    for (uint64_t i = 0; i < kProbeKeys; ++i) w.u64(0);
    uint8_t reply[9];
    auto probe_deadline = Clock::now() + kProbeTimeout;
    IoStatus s = send_all(fd_.get(), w.buffer().data(), w.buffer().size(), probe_deadline, &err);
    if (s == IoStatus::kOk) s = recv_exact(fd_.get(), reply, sizeof reply, probe_deadline, &err);
    if (s == IoStatus::kOk) {
      if (reply[8] > 1)
        throw StoreError("store at " + address() + " answered the handshake with CHECK reply " +
                         std::to_string(reply[8]) + ": not a c10d-compatible store");
      dialect_ = Dialect::kV2;
      DDP_LOG(DEBUG) << "store: connected to " << address() << " (" << dialect_name(dialect_) << ")";
      return;
    }
    if (s == IoStatus::kTimeout)
      throw StoreError("store at " + address() + " did not answer the handshake within " +
                       std::to_string(kProbeTimeout.count()) + " s");
    fd_.reset();
  }

  // 2. The c10d 1.x/2.0 numbering: GETNUMKEYS is byte 6 there and has no side effects.
  fd_ = open_connection(deadline);
  uint8_t code = *op_code(Dialect::kLegacy, Op::kNumKeys);
  int64_t n = 0;
  auto probe_deadline = Clock::now() + kProbeTimeout;
  IoStatus s = send_all(fd_.get(), &code, 1, probe_deadline, &err);
  if (s == IoStatus::kOk) s = recv_exact(fd_.get(), &n, sizeof n, probe_deadline, &err);
  if (s != IoStatus::kOk) {
    fd_.reset();
    throw StoreError("store at " + address() +
                     " closed both handshakes (c10d 2.x and 1.x numbering): it is not a "
                     "c10d-compatible store, or it is a ddp store that requires a token "
                     "(DDP_STORE_TOKEN)");
  }
  dialect_ = Dialect::kLegacy;
  DDP_LOG(DEBUG) << "store: connected to " << address() << " (" << dialect_name(dialect_) << ")";
}

void Client::ensure_connected() {
  if (fd_.valid()) return;
  if (!lost_.empty()) throw StoreError(lost_);
  handshake();  // the previous connection was dropped on purpose (after a timeout)
}

uint8_t Client::code(Op op) const {
  auto c = op_code(dialect_, op);
  if (!c)
    throw StoreError(std::string("store at ") + address() + " (" + dialect_name(dialect_) +
                     ") has no " + op_name(op) + " query");
  return *c;
}

void Client::fail(IoStatus status, int err, Op op, const std::string& what, Clock::time_point) {
  fd_.reset();
  std::string where = std::string(op_name(op)) + (what.empty() ? "" : " of " + what) + " at store " + address();
  if (status == IoStatus::kTimeout)
    throw TimeoutError("store " + where + " timed out after " + std::to_string(op_timeout_.count()) + " ms");
  if (status == IoStatus::kClosed)
    lost_ = "store server " + address() + " closed the connection (during " + where + ")";
  else
    lost_ = "store connection to " + address() + " failed during " + where + ": " + std::strerror(err);
  throw StoreError(lost_);
}

void Client::send(const Bytes& request, Op op, const std::string& what, Clock::time_point deadline) {
  int err = 0;
  IoStatus s = send_all(fd_.get(), request.data(), request.size(), deadline, &err);
  if (s != IoStatus::kOk) fail(s, err, op, what, deadline);
}

void Client::recv(void* data, size_t size, Op op, const std::string& what, Clock::time_point deadline) {
  int err = 0;
  IoStatus s = recv_exact(fd_.get(), data, size, deadline, &err);
  if (s != IoStatus::kOk) fail(s, err, op, what, deadline);
}

Bytes Client::recv_bytes(Op op, const std::string& what, Clock::time_point deadline) {
  uint64_t n = recv_value<uint64_t>(op, what, deadline);
  if (n > kMaxValueBytes * 4) {
    fd_.reset();
    lost_ = "store at " + address() + " sent a " + std::to_string(n) + "-byte value for " + op_name(op) +
            " of " + what + ": protocol mismatch";
    throw StoreError(lost_);
  }
  Bytes out(n);
  if (n) recv(out.data(), n, op, what, deadline);
  return out;
}

void Client::set(const std::string& key, const Bytes& value, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  Writer w;
  w.u8(code(Op::kSet)).str(wire_key(key)).bytes(value);
  send(w.buffer(), Op::kSet, quote(key), deadline_after(timeout));
}

Bytes Client::get(const std::string& key, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  // c10d's get() is WAIT then GET, so a get() blocks until the key exists.
  do_wait({wire_key(key)}, "get", quote(key), timeout);
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kGet)).str(wire_key(key));
  send(w.buffer(), Op::kGet, quote(key), deadline);
  return recv_bytes(Op::kGet, quote(key), deadline);
}

int64_t Client::add(const std::string& key, int64_t delta, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kAdd)).str(wire_key(key)).i64(delta);
  send(w.buffer(), Op::kAdd, quote(key), deadline);
  return recv_value<int64_t>(Op::kAdd, quote(key), deadline);
}

Bytes Client::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired,
                          std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kCompareSet)).str(wire_key(key)).bytes(expected).bytes(desired);
  send(w.buffer(), Op::kCompareSet, quote(key), deadline);
  return recv_bytes(Op::kCompareSet, quote(key), deadline);
}

bool Client::check(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kCheck)).u64(keys.size());
  for (const auto& k : keys) w.str(wire_key(k));
  send(w.buffer(), Op::kCheck, quote_keys(keys), deadline);
  auto r = recv_value<uint8_t>(Op::kCheck, quote_keys(keys), deadline);
  if (r == static_cast<uint8_t>(CheckResponse::kReady)) return true;
  if (r == static_cast<uint8_t>(CheckResponse::kNotReady)) return false;
  fd_.reset();
  lost_ = "store at " + address() + " answered CHECK with " + std::to_string(r) + ": protocol mismatch";
  throw StoreError(lost_);
}

void Client::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  std::vector<std::string> wire;
  wire.reserve(keys.size());
  for (const auto& k : keys) wire.push_back(wire_key(k));
  do_wait(wire, "wait", quote_keys(keys), timeout);
}

void Client::do_wait(const std::vector<std::string>& wire_keys, const char* op,
                     const std::string& what, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kWait)).u64(wire_keys.size());
  for (const auto& k : wire_keys) w.str(k);
  send(w.buffer(), Op::kWait, what, deadline);
  uint8_t reply = 0;
  int err = 0;
  IoStatus s = recv_exact(fd_.get(), &reply, 1, deadline, &err);
  if (s == IoStatus::kOk) {
    if (reply == static_cast<uint8_t>(WaitResponse::kStopWaiting)) return;
    fd_.reset();
    lost_ = "store at " + address() + " answered WAIT with " + std::to_string(reply) + ": protocol mismatch";
    throw StoreError(lost_);
  }
  if (s != IoStatus::kTimeout) fail(s, err, Op::kWait, what, deadline);

  // Timed out. c10d >= 2.0 servers take CANCEL_WAIT and answer WAIT_CANCELED (after a
  // STOP_WAITING that may already be on its way). 1.x servers do not: drop the connection, which
  // makes the server forget the wait, and reconnect on the next call.
  bool usable = false;
  if (dialect_ == Dialect::kV2) {
    auto cancel_deadline = Clock::now() + kCancelTimeout;
    uint8_t code = *op_code(dialect_, Op::kCancelWait);
    if (send_all(fd_.get(), &code, 1, cancel_deadline, &err) == IoStatus::kOk &&
        recv_exact(fd_.get(), &reply, 1, cancel_deadline, &err) == IoStatus::kOk) {
      if (reply == static_cast<uint8_t>(WaitResponse::kStopWaiting))
        usable = recv_exact(fd_.get(), &reply, 1, cancel_deadline, &err) == IoStatus::kOk &&
                 reply == static_cast<uint8_t>(WaitResponse::kWaitCanceled);
      else
        usable = reply == static_cast<uint8_t>(WaitResponse::kWaitCanceled);
    }
  }
  std::string missing;
  if (usable && wire_keys.size() > 1) {
    // Name the keys that are still missing (best effort; the connection is in sync again).
    try {
      std::vector<std::string> absent;
      for (const auto& k : wire_keys) {
        Writer c;
        c.u8(code(Op::kCheck)).u64(1).str(k);
        auto d = Clock::now() + kCancelTimeout;
        send(c.buffer(), Op::kCheck, k, d);
        if (recv_value<uint8_t>(Op::kCheck, k, d) != static_cast<uint8_t>(CheckResponse::kReady))
          absent.push_back(k.substr(1));
      }
      missing = "; missing: " + quote_keys(absent);
    } catch (const std::exception&) {
      usable = false;
    }
  }
  if (!usable) fd_.reset();
  throw TimeoutError(std::string("store ") + op + " of " + what + " at " + address() + " timed out after " +
                     std::to_string(timeout.count()) + " ms" + missing);
}

bool Client::delete_key(const std::string& key, std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kDeleteKey)).str(wire_key(key));
  send(w.buffer(), Op::kDeleteKey, quote(key), deadline);
  return recv_value<int64_t>(Op::kDeleteKey, quote(key), deadline) == 1;
}

int64_t Client::num_keys(std::chrono::milliseconds timeout) {
  op_timeout_ = timeout;
  ensure_connected();
  auto deadline = deadline_after(timeout);
  Writer w;
  w.u8(code(Op::kNumKeys));
  send(w.buffer(), Op::kNumKeys, "", deadline);
  return recv_value<int64_t>(Op::kNumKeys, "", deadline);
}

}  // namespace ddp::store

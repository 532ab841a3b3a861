#pragma once
// One client connection to a c10d-compatible store server (ours, or PyTorch's).
//
// On connect it presents the token (when it has one) and then finds out which c10d dialect the
// server speaks (see wire.h and docs/STORE.md, "Dialect detection"). Not thread-safe by itself:
// TCPStore serialises calls with a mutex.

#include <torch/arg.h>
#include <chrono>
#include <string>
#include <vector>

#include "ddp/store/socket.h"
#include "ddp/store/wire.h"

namespace ddp::store {

struct ClientOptions {
  TORCH_ARG(std::string, host);
  TORCH_ARG(int, port) = 0;
  TORCH_ARG(std::chrono::milliseconds, connect_timeout) = std::chrono::minutes(5);
  TORCH_ARG(std::string, token);
};

class Client {
 public:
  /// Connects (retrying until connect_timeout) and handshakes; throws StoreError.
  explicit Client(ClientOptions options);

  // Keys are user keys: the c10d "/" prefix is added on the wire, as c10d's TCPStore does.
  void set(const std::string& key, const Bytes& value, std::chrono::milliseconds timeout);
  Bytes get(const std::string& key, std::chrono::milliseconds timeout);
  int64_t add(const std::string& key, int64_t delta, std::chrono::milliseconds timeout);
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired,
                    std::chrono::milliseconds timeout);
  bool check(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  bool delete_key(const std::string& key, std::chrono::milliseconds timeout);
  int64_t num_keys(std::chrono::milliseconds timeout);

  Dialect dialect() const { return dialect_; }
  std::string address() const { return options_.host() + ":" + std::to_string(options_.port()); }

 private:
  /// Connects and presents the token; the connection is not validated yet.
  Fd open_connection(Clock::time_point deadline);
  void handshake();
  void ensure_connected();
  /// The query byte for `op` in the server's dialect.
  uint8_t code(Op op) const;

  void send(const Bytes& request, Op op, const std::string& what, Clock::time_point deadline);
  void recv(void* data, size_t size, Op op, const std::string& what, Clock::time_point deadline);
  Bytes recv_bytes(Op op, const std::string& what, Clock::time_point deadline);
  template <typename T>
  T recv_value(Op op, const std::string& what, Clock::time_point deadline) {
    T v{};
    recv(&v, sizeof v, op, what, deadline);
    return v;
  }
  /// WAIT for `wire_keys`; `op` ("get" or "wait") and `what` (the user keys) name it in errors.
  void do_wait(const std::vector<std::string>& wire_keys, const char* op, const std::string& what,
               std::chrono::milliseconds timeout);
  /// Throws for a failed transfer; a timeout leaves the connection unusable, so it is dropped.
  [[noreturn]] void fail(IoStatus status, int err, Op op, const std::string& what,
                         Clock::time_point deadline);

  ClientOptions options_;
  Fd fd_;
  Dialect dialect_ = Dialect::kV2;
  /// Set once the server closed the connection; later calls fail fast with it.
  std::string lost_;
  /// Timeout of the call in progress, for messages.
  std::chrono::milliseconds op_timeout_{0};
};

/// "'a', 'b'" for messages.
std::string quote_keys(const std::vector<std::string>& keys);

}  // namespace ddp::store

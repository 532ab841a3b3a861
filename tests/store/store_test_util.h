#pragma once
// Helpers shared by the store tests.

#include <ddp/store.h>

#include <chrono>
#include <memory>
#include <string>

namespace ddp::testing {

/// A client of a server on 127.0.0.1:`port` with short timeouts (and no token unless given).
std::unique_ptr<TCPStore> connect_client(int port, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                         const std::string& token = "");

/// Milliseconds since `start`.
long long elapsed_ms(std::chrono::steady_clock::time_point start);

/// A raw TCP connection to 127.0.0.1:port for feeding the server hand-made bytes.
class RawSocket {
 public:
  explicit RawSocket(int port);
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  /// Sends all bytes; false when the peer closed.
  bool send(const std::string& bytes);
  /// True when the server closed the connection (EOF or reset) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout);
  /// Reads exactly n bytes (empty string on EOF/timeout).
  std::string recv(size_t n, std::chrono::milliseconds timeout);
  void close();

 private:
  int fd_ = -1;
};

/// Little-endian wire encodings.
std::string u64le(uint64_t v);
std::string u32le(uint32_t v);

/// c10d 2.x's first request: VALIDATE (query 0) with its magic number.
inline const std::string kValidate = std::string(1, '\0') + u32le(0x3C85F7CE);
std::string wire_str(const std::string& s);

/// A value read from a store, as text.
std::string bytes_text(const Store::Bytes& b);

}  // namespace ddp::testing

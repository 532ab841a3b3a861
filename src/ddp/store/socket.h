#pragma once
// POSIX socket helpers for the store: an owning fd, connect with retry, deadline-bound send/recv,
// and the dual-stack listening socket.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ddp::store {

using Clock = std::chrono::steady_clock;

/// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

/// How connect_with_retry backs off: `initial`, doubling, capped at `max`.
struct Backoff {
  std::chrono::milliseconds initial{50};
  std::chrono::milliseconds max{1000};
};

/// Resolves host:port and connects (TCP_NODELAY, blocking mode), retrying DNS failures
/// (EAI_AGAIN, EAI_NONAME, ...) and refused/unreachable/timed-out connections with exponential
/// backoff until `deadline`. Throws ddp::StoreError naming host, port, the time spent, the number of
/// attempts and the last error. Other errors (e.g. a malformed port) throw at once.
Fd connect_with_retry(const std::string& host, int port, Clock::time_point deadline,
                      const Backoff& backoff = {});

/// Result of a deadline-bound transfer.
enum class IoStatus { kOk, kTimeout, kClosed, kError };

/// Sends all of [data, data+size) before `deadline` (MSG_NOSIGNAL, EINTR-safe).
IoStatus send_all(int fd, const void* data, size_t size, Clock::time_point deadline, int* err);
/// Receives exactly `size` bytes before `deadline`; kClosed on EOF.
IoStatus recv_exact(int fd, void* data, size_t size, Clock::time_point deadline, int* err);

/// A non-blocking listening socket on all interfaces: IPv6 dual-stack when the kernel has IPv6,
/// else IPv4. SO_REUSEADDR; port 0 picks a free port. Throws ddp::StoreError.
Fd listen_all_interfaces(int port, int backlog);
/// listen_all_interfaces when `address` is empty; else a non-blocking listening socket on that one
/// address (an IP literal or a name that resolves to a local address). ddp::ConfigError when the
/// address does not resolve or is not local; ddp::StoreError when the port is taken.
Fd listen_on(const std::string& address, int port, int backlog);
/// The local port a socket is bound to.
int bound_port(int fd);
/// "ip:port" of the peer, for log lines.
std::string peer_name(int fd);

void set_nonblocking(int fd);
void set_nodelay(int fd);

/// A far-future deadline for "no timeout".
Clock::time_point deadline_after(std::chrono::milliseconds timeout);

}  // namespace ddp::store

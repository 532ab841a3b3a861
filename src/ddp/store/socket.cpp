#include "ddp/store/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include <ddp/errors.h>
#include <ddp/logging.h>

namespace ddp::store {
namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, 1 << 30));
}

/// Waits for `events` on fd until deadline. 1: ready, 0: timeout, -1: error.
int wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return 1;
    if (rc == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

bool retryable_gai(int rc) {
  return rc == EAI_AGAIN || rc == EAI_NONAME || rc == EAI_FAIL
#ifdef EAI_NODATA
         || rc == EAI_NODATA
#endif
#ifdef EAI_ADDRFAMILY
         || rc == EAI_ADDRFAMILY
#endif
      ;
}

bool retryable_connect(int err) {
  return err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == ETIMEDOUT ||
         err == ECONNRESET || err == ECONNABORTED || err == EADDRNOTAVAIL || err == EAGAIN ||
         err == EHOSTDOWN || err == ENETDOWN;
}

/// One non-blocking connect to `ai` bounded by `deadline`; returns the fd or sets *err.
Fd connect_one(const addrinfo* ai, Clock::time_point deadline, int* err) {
  Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return Fd();
  }
  int rc;
  do {
    rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      return Fd();
    }
    int ready = wait_fd(fd.get(), POLLOUT, deadline);
    if (ready <= 0) {
      *err = ready == 0 ? ETIMEDOUT : errno;
      return Fd();
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      *err = so_error;
      return Fd();
    }
  }
  // Back to blocking mode: the client does its own deadline handling with poll().
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  set_nodelay(fd.get());
  return fd;
}

std::string seconds_text(Clock::duration d) {
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << std::chrono::duration<double>(d).count() << " s";
  return os.str();
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);  // no EINTR retry: on Linux the fd is released either way
  fd_ = -1;
}

Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  // Anything past ~100 years is "forever" and must not overflow the clock.
  if (timeout.count() <= 0 || timeout > std::chrono::hours(24 * 365 * 100))
    return Clock::time_point::max() - std::chrono::hours(24);
  return Clock::now() + timeout;
}

Fd connect_with_retry(const std::string& host, int port, Clock::time_point deadline,
                      const Backoff& backoff) {
  if (port <= 0 || port > 65535)
    throw StoreError("store port " + std::to_string(port) + " for host '" + host +
                     "' is not in 1..65535");
  const auto start = Clock::now();
  const std::string service = std::to_string(port);
  auto delay = backoff.initial;
  int attempts = 0;
  std::string last_error = "no attempt made (deadline already passed)";
  bool last_was_dns = false;
  Clock::time_point next_warn = start;
  for (;;) {
    ++attempts;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    // No AI_ADDRCONFIG: in a network namespace with only loopback it hides "localhost".
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    last_was_dns = rc != 0;
    if (rc == 0) {
      int err = 0;
      for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        // Each address gets a bounded slice so a black-holed address does not eat the deadline.
        auto now = Clock::now();
        auto slice = std::max(std::min(deadline, now + std::chrono::seconds(10)),
                              now + std::chrono::milliseconds(200));
        Fd fd = connect_one(ai, slice, &err);
        if (fd.valid()) {
          ::freeaddrinfo(res);
          if (attempts > 1) {
            DDP_LOG(INFO) << "store: connected to " << host << ":" << port << " after " << attempts
                          << " attempts (" << seconds_text(Clock::now() - start) << ")";
          }
          return fd;
        }
        if (!retryable_connect(err)) break;
      }
      ::freeaddrinfo(res);
      last_error = std::string("connect: ") + std::strerror(err) + " (errno " + std::to_string(err) + ")";
      if (!retryable_connect(err))
        throw StoreError("could not connect to store at " + host + ":" + service + ": " + last_error);
    } else {
      last_error = std::string("getaddrinfo: ") + ::gai_strerror(rc) + " (EAI " + std::to_string(rc) + ")";
      if (rc == EAI_SYSTEM) last_error += std::string(": ") + std::strerror(errno);
      if (!retryable_gai(rc) && rc != EAI_SYSTEM)
        throw StoreError("could not resolve store host '" + host + "': " + last_error);
    }
    auto now = Clock::now();
    // WARN at a bounded rate, so an operator sees what is retried and why: a name that does not
    // resolve at once (unusual, worth a line), a refusal once it has lasted 10 s (workers
    // routinely start before the server listens), then every 30 s; DEBUG on every attempt.
    const bool dns = rc != 0;
    DDP_LOG(DEBUG) << "store: " << host << ":" << port << " not reachable yet (" << last_error
                   << "), retrying";
    if (now >= next_warn && (dns || now - start >= std::chrono::seconds(10)) && now < deadline) {
      DDP_LOG(WARN) << "store: " << (dns ? "cannot resolve store host '" + host + "'" : "cannot connect to store at " + host + ":" + service)
                    << " (" << last_error << ") after " << attempts << " attempt(s) in "
                    << seconds_text(now - start) << "; retrying for up to " << seconds_text(deadline - now)
                    << " more (connect_timeout)";
      next_warn = now + std::chrono::seconds(30);
    }
    if (now >= deadline) break;
    // Sleep at most up to the deadline; the loop then makes one last attempt at the deadline.
    std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - now));
    delay = std::min(delay * 2, backoff.max);
  }
  throw StoreError("could not connect to store at " + host + ":" + service + " after trying for " +
                   seconds_text(Clock::now() - start) + " (" + std::to_string(attempts) +
                   " attempts); last error: " + last_error +
                   (last_was_dns ? "; the store host name '" + host + "' does not resolve (check MASTER_ADDR / --rdzv-endpoint)" : ""));
}

IoStatus send_all(int fd, const void* data, size_t size, Clock::time_point deadline, int* err) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int ready = wait_fd(fd, POLLOUT, deadline);
      if (ready == 0) return IoStatus::kTimeout;
      if (ready < 0) {
        *err = errno;
        return IoStatus::kError;
      }
      continue;
    }
    *err = n < 0 ? errno : EPIPE;
    return (*err == EPIPE || *err == ECONNRESET) ? IoStatus::kClosed : IoStatus::kError;
  }
  return IoStatus::kOk;
}

IoStatus recv_exact(int fd, void* data, size_t size, Clock::time_point deadline, int* err) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    int ready = wait_fd(fd, POLLIN, deadline);
    if (ready == 0) return IoStatus::kTimeout;
    if (ready < 0) {
      *err = errno;
      return IoStatus::kError;
    }
    ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return IoStatus::kClosed;
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    *err = errno;
    return errno == ECONNRESET ? IoStatus::kClosed : IoStatus::kError;
  }
  return IoStatus::kOk;
}

Fd listen_all_interfaces(int port, int backlog) {
  if (port < 0 || port > 65535)
    throw StoreError("store server port " + std::to_string(port) + " is not in 0..65535");
  int one = 1, zero = 0;
  // Dual-stack first: one IPv6 socket that also accepts IPv4 (mapped) connections.
  Fd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.valid()) {
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::listen(fd.get(), backlog) == 0)
      return fd;
    int err = errno;
    if (err == EADDRINUSE)
      throw StoreError("store server cannot listen on port " + std::to_string(port) +
                       ": address already in use");
    fd.reset();
  }
  fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw StoreError(std::string("store server socket(): ") + std::strerror(errno));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd.get(), backlog) != 0)
    throw StoreError("store server cannot listen on port " + std::to_string(port) + ": " +
                     std::strerror(errno));
  return fd;
}

Fd listen_on(const std::string& address, int port, int backlog) {
  if (address.empty()) return listen_all_interfaces(port, backlog);
  if (port < 0 || port > 65535)
    throw StoreError("store server port " + std::to_string(port) + " is not in 0..65535");
  // A bracketed IPv6 literal ("[::1]") is accepted as users write it in endpoints.
  std::string host = address;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0)
    throw ConfigError("store bind address '" + address + "' does not resolve: " + ::gai_strerror(rc));
  std::string last = "no address";
  int last_errno = 0;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd.valid()) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), backlog) == 0) {
      ::freeaddrinfo(res);
      return fd;
    }
    last_errno = errno;
  }
  ::freeaddrinfo(res);
  last = std::strerror(last_errno);
  if (last_errno == EADDRINUSE)
    throw StoreError("store server cannot listen on " + address + " port " + service + ": address already in use");
  throw ConfigError("store server cannot listen on bind address '" + address + "' port " + service + ": " +
                    last + (last_errno == EADDRNOTAVAIL ? " (not an address of this host)" : ""));
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

std::string peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  std::string h = host;
  if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h = h.substr(7);  // v4-mapped
  else if (h.find(':') != std::string::npos) h = "[" + h + "]";
  return h + ":" + serv;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace ddp::store

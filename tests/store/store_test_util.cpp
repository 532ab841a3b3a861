#include "store_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace ddp::testing {

std::unique_ptr<TCPStore> connect_client(int port, std::chrono::milliseconds timeout, const std::string& token) {
  return std::make_unique<TCPStore>(TCPStoreOptions()
                                        .host("127.0.0.1")
                                        .port(port)
                                        .timeout(timeout)
                                        .connect_timeout(std::chrono::seconds(10))
                                        .token(token));
}

long long elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

RawSocket::RawSocket(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error(std::string("RawSocket connect: ") + std::strerror(errno));
}

RawSocket::~RawSocket() { close(); }

void RawSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawSocket::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool RawSocket::closed_by_peer(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc == 0) return false;
    if (rc < 0) continue;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset
  }
}

std::string RawSocket::recv(size_t n, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
    if (r <= 0) return "";
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

std::string u64le(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string u32le(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string wire_str(const std::string& s) { return u64le(s.size()) + s; }
std::string bytes_text(const Store::Bytes& b) { return std::string(b.begin(), b.end()); }

}  // namespace ddp::testing

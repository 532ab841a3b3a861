// Ports for the stores of tests: outside the kernel's ephemeral range, and reserved against every
// other test process on the machine until this one exits.
//
// Why not bind(0): that gives an ephemeral port, and once it is closed again the kernel may hand it
// to any socket on the machine that asks for one (another test's Gloo listener, the source port of
// any connect) before the rank meant to listen there binds it. Under `ctest -j` that happened
// (stop 32's CI, GlooShm.HierarchicalInterleavedRanks: rank 0 "cannot listen on port 38735:
// address already in use", rank 1 reached another test's Gloo listener there). A port below the
// ephemeral range is never handed out by the kernel, so only an explicit bind can take it, and
// the only explicit binders on a test machine are tests: each reserves its ports by binding an
// abstract Unix socket named after the port. Abstract names live in the network namespace, so the
// reservation holds across the Debian 13 chroot too, and the kernel drops it when the process
// ends, however it ends.
#include "support/multiprocess.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddp::testing {
namespace {

struct PortRange {
  int first;
  int last;
};

// The ports the kernel picks from for bind(0) and connect: net.ipv4.ip_local_port_range.
PortRange ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  PortRange r{32768, 60999};  // the kernel's default, when /proc cannot tell
  int first = 0, last = 0;
  if (in >> first >> last && first > 0 && last >= first) r = {first, last};
  return r;
}

// Ports tests may reserve: below the ephemeral range, else above it.
PortRange test_range() {
  constexpr int kLowest = 10000;  // clear of the well-known and commonly configured service ports
  constexpr int kEnough = 1000;
  const PortRange eph = ephemeral_range();
  if (eph.first - kLowest >= kEnough) return {kLowest, eph.first - 1};
  if (65535 - eph.last >= kEnough) return {eph.last + 1, 65535};
  throw std::runtime_error("free_port: net.ipv4.ip_local_port_range " + std::to_string(eph.first) + "-" +
                           std::to_string(eph.last) + " leaves fewer than 1000 ports for tests outside it");
}

// The reservation's descriptor (held until the process exits), or -1 when another process holds it.
int reserve(int port) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // CLOEXEC: ranks need not hold it
  if (fd < 0) throw std::runtime_error("free_port: socket(AF_UNIX) failed");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "ddp-test-port-" + std::to_string(port);
  name.copy(addr.sun_path + 1, sizeof addr.sun_path - 2);  // sun_path[0] == 0: the abstract namespace
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Nothing listens or is bound there now (TIME_WAIT is fine: the store server binds with
// SO_REUSEADDR, and so does this check).
bool bindable(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket(AF_INET) failed");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int free_port() {
  static const PortRange range = test_range();
  static std::mt19937 pick{std::random_device{}()};  // a random start: two runs seldom reuse a port
  const int count = range.last - range.first + 1;
  int start = static_cast<int>(pick() % static_cast<unsigned>(count));
  // A fixed first try, for the test that another process holding a port makes this one skip it.
  if (const char* first = std::getenv("DDP_TEST_FREE_PORT_FIRST_TRY")) {
    const int port = std::atoi(first);
    if (port >= range.first && port <= range.last) start = port - range.first;
  }
  for (int i = 0; i < count; ++i) {
    const int port = range.first + (start + i) % count;
    const int held = reserve(port);
    if (held < 0) continue;
    if (bindable(port)) return port;  // `held` stays open on purpose
    ::close(held);
  }
  throw std::runtime_error("free_port: every port from " + std::to_string(range.first) + " to " +
                           std::to_string(range.last) + " is taken");
}

}  // namespace ddp::testing

#include "util/host_name.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>

namespace ddp::util {
namespace {

// An address as comparable text (family + bytes), IPv4-mapped IPv6 taken as the IPv4 address.
std::string address_key(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return std::string("4") + std::string(reinterpret_cast<const char*>(&in->sin_addr), 4);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
      return std::string("4") + std::string(reinterpret_cast<const char*>(&in6->sin6_addr) + 12, 4);
    return std::string("6") + std::string(reinterpret_cast<const char*>(&in6->sin6_addr), 16);
  }
  return "";
}

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && reinterpret_cast<const uint8_t*>(&a)[12] == 127);
  }
  return false;
}

}  // namespace

std::optional<std::string> host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return std::nullopt;
  return std::string(host);
}

bool names_this_machine(const std::string& host) {
  if (host.empty()) return false;
  if (host == "localhost" || host == host_name()) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  std::set<std::string> wanted;
  bool loopback = false;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    loopback = loopback || is_loopback(ai->ai_addr);
    wanted.insert(address_key(ai->ai_addr));
  }
  ::freeaddrinfo(res);
  if (loopback) return true;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return false;
  bool mine = false;
  for (ifaddrs* i = ifs; i && !mine; i = i->ifa_next)
    if (i->ifa_addr && wanted.count(address_key(i->ifa_addr))) mine = true;
  ::freeifaddrs(ifs);
  return mine;
}

}  // namespace ddp::util

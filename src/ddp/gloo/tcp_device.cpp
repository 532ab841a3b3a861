#include "ddp/gloo/tcp_device.h"

#include <ddp/errors.h>
#include <ddp/logging.h>
#include <gloo/transport/tcp/device.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace ddp::gloo_backend {
namespace {

// c10d's test: the name resolves, and one of its addresses can be bound here (so it is ours).
bool resolves_to_bindable_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  bool usable = false;
  for (addrinfo* rp = result; rp != nullptr && !usable; rp = rp->ai_next) {
    int fd = socket(rp->ai_family, rp->ai_socktype, rp->ai_protocol);
    if (fd == -1) continue;
    usable = bind(fd, rp->ai_addr, rp->ai_addrlen) == 0;
    close(fd);
  }
  freeaddrinfo(result);
  return usable;
}

std::string first_of_list(const std::string& value) {
  auto comma = value.find(',');
  return comma == std::string::npos ? value : value.substr(0, comma);
}

}  // namespace

TcpDeviceChoice choose_tcp_device(const std::string& hostname_option) {
  if (!hostname_option.empty()) return {"", hostname_option, "GlooOptions::hostname"};
  for (const char* var : {"GLOO_SOCKET_IFNAME", "DDP_SOCKET_IFNAME"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    std::string iface = first_of_list(v);
    if (iface != v) {
      DDP_LOG(WARN) << var << "=" << v << " lists several interfaces; ddp's gloo group uses only the first ("
                    << iface << ")";
    }
    return {iface, "", var};
  }
  std::vector<char> name(256, '\0');
  if (gethostname(name.data(), name.size() - 1) == 0 && resolves_to_bindable_address(name.data()))
    return {"", name.data(), "this host's name"};
  DDP_LOG(WARN) << "host name '" << name.data()
                << "' does not resolve to a local address; gloo binds to 127.0.0.1, so ranks on other "
                   "machines cannot connect. Set GLOO_SOCKET_IFNAME to the interface to use.";
  return {"", "127.0.0.1", "loopback fallback"};
}

std::shared_ptr<::gloo::transport::Device> make_tcp_device(const TcpDeviceChoice& choice) {
  ::gloo::transport::tcp::attr attr;
  attr.iface = choice.iface;
  attr.hostname = choice.hostname;
  try {
    return ::gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    std::string what = choice.iface.empty() ? "host '" + choice.hostname + "'" : "interface '" + choice.iface + "'";
    throw ConfigError("gloo cannot use " + what + " (from " + choice.reason + "): " + e.what());
  }
}

}  // namespace ddp::gloo_backend

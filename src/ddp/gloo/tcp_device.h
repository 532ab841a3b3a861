#pragma once
// Picks the network address Gloo binds to, the way c10d does:
//   1. GlooOptions::hostname when set,
//   2. else the interface named by GLOO_SOCKET_IFNAME (or DDP_SOCKET_IFNAME),
//   3. else this host's name when it resolves to an address we can bind,
//   4. else the loopback address (with a warning: other nodes cannot reach us then).

#include <memory>
#include <string>

namespace gloo::transport {
class Device;
}

namespace ddp::gloo_backend {

struct TcpDeviceChoice {
  std::string iface;     ///< interface name, or empty
  std::string hostname;  ///< host name/address, or empty
  std::string reason;    ///< where the choice came from, for logs and errors
};

/// Applies the rules above (reads the environment).
TcpDeviceChoice choose_tcp_device(const std::string& hostname_option);

/// Creates the device; ConfigError naming the interface/host (and its source) when it is unusable.
std::shared_ptr<::gloo::transport::Device> make_tcp_device(const TcpDeviceChoice& choice);

}  // namespace ddp::gloo_backend

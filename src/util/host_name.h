#pragma once
// This machine's host name (gethostname), written once for every place that shows or uses it, and
// whether a host someone gave names this machine.
#include <optional>
#include <string>

namespace ddp::util {

/// The host name, or nullopt when the system has none to give (each caller picks its stand-in).
std::optional<std::string> host_name();

/// True when `host` is this machine: "localhost", a loopback address, this machine's host name, or
/// a name or address that resolves to an address one of this machine's interfaces has. The same
/// test torch's c10d rendezvous uses to decide which node hosts the store (a resolver that does not
/// answer, or a CNAME it cannot see through, gives false).
bool names_this_machine(const std::string& host);

}  // namespace ddp::util

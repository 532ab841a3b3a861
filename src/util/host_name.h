#pragma once
// This machine's host name (gethostname), written once for every place that shows or uses it.
#include <optional>
#include <string>

namespace ddp::util {

/// The host name, or nullopt when the system has none to give (each caller picks its stand-in).
std::optional<std::string> host_name();

}  // namespace ddp::util

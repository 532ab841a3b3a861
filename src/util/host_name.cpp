#include "util/host_name.h"

#include <unistd.h>

namespace ddp::util {

std::optional<std::string> host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return std::nullopt;
  return std::string(host);
}

}  // namespace ddp::util

#include "util/choices.h"

#include <ddp/errors.h>

namespace ddp::util {

void require_choice(const std::string& what, const std::string& value, const std::vector<std::string>& choices) {
  std::string list;
  for (const auto& c : choices) {
    if (value == c) return;
    list += (list.empty() ? "" : ", ") + c;
  }
  throw ConfigError(what + "='" + value + "' is not one of " + list);
}

}  // namespace ddp::util

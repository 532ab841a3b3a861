#include "support/ci.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace ddp::testing {

bool in_ci() {
  const char* v = std::getenv("CI");
  std::string s = v ? v : "";
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s == "true" || s == "1";
}

}  // namespace ddp::testing

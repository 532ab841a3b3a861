#include "trainer/flag_values.h"

#include <ddp/errors.h>

namespace ddp::trainer {

int64_t flag_integer(const std::string& flag, const std::string& value, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size() || x < lo || x > hi)
    throw ddp::ConfigError(flag + "='" + value + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int64_t>(x);
}

double flag_real(const std::string& flag, const std::string& value, double lo, double hi) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size() || !(x >= lo && x <= hi))
    throw ddp::ConfigError(flag + "='" + value + "' is not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

void require_choice(const std::string& flag, const std::string& value, const std::vector<std::string>& choices) {
  std::string list;
  for (const auto& c : choices) {
    if (value == c) return;
    list += (list.empty() ? "" : ", ") + c;
  }
  throw ddp::ConfigError(flag + "='" + value + "' is not one of " + list);
}

}  // namespace ddp::trainer

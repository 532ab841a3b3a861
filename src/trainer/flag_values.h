#pragma once
// Strict conversion of flag values read as strings, so a bad value is a ddp::ConfigError naming the
// flag and the value (exit 2) rather than whatever the parser happened to say.
//
//   int64_t epochs = ddp::trainer::flag_integer("--epochs", "12", 1, 1000000);   // 12
//   ddp::trainer::require_choice("--progress", "bar", {"auto", "bar", "plain"});

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::trainer {

/// A whole-string decimal integer in [lo, hi]: "--flag='v' is not an integer in lo..hi" otherwise.
int64_t flag_integer(const std::string& flag, const std::string& value, int64_t lo, int64_t hi);
/// A whole-string number in [lo, hi]: "--flag='v' is not a number in [lo, hi]" otherwise.
double flag_real(const std::string& flag, const std::string& value, double lo, double hi);
/// `value` is one of `choices`: "--flag='v' is not one of a, b, c" otherwise.
void require_choice(const std::string& flag, const std::string& value, const std::vector<std::string>& choices);

}  // namespace ddp::trainer

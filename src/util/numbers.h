#pragma once
// The one strict integer parser: the whole string must be a decimal integer (surrounding blanks
// aside, which YAML values sometimes carry) inside a range. std::stoll and friends accept "12abc"
// and throw std::invalid_argument; this never does either.
//
//   int port = static_cast<int>(ddp::util::parse_int("MASTER_PORT", text, 1, 65535));
#include <optional>
#include <string>

namespace ddp::util {

/// The integer `text` spells when it is one whole decimal integer in [lo, hi]; nullopt otherwise.
std::optional<long long> to_int(const std::string& text, long long lo, long long hi);

/// Like to_int, but a ConfigError names the thing and the value: "WHAT='text' is empty; expected an
/// integer", "... is not an integer" or "... is out of range: expected lo..hi".
long long parse_int(const std::string& what, const std::string& text, long long lo, long long hi);

}  // namespace ddp::util

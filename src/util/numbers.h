#pragma once
// The one strict number parser, integers and reals: the whole string must be the number (surrounding
// blanks aside, which YAML values sometimes carry) inside a range. std::stoll/std::stod accept
// "12abc" and throw std::invalid_argument; these never do either.
//
//   int port = static_cast<int>(ddp::util::parse_int("MASTER_PORT", text, 1, 65535));
//   double lr = ddp::util::parse_real("--lr", "1e-3", 0, 1e6);
#include <optional>
#include <string>

namespace ddp::util {

/// The integer `text` spells when it is one whole decimal integer in [lo, hi]; nullopt otherwise.
std::optional<long long> to_int(const std::string& text, long long lo, long long hi);

/// Like to_int, but a ConfigError names the thing and the value: "WHAT='text' is empty; expected an
/// integer", "... is not an integer" or "... is out of range: expected lo..hi".
long long parse_int(const std::string& what, const std::string& text, long long lo, long long hi);

/// The finite number `text` spells when it is one whole decimal or scientific number (strtod's
/// syntax; "nan" and "inf" are refused); nullopt otherwise.
std::optional<double> to_real(const std::string& text);

/// to_real in [lo, hi], else a ConfigError naming the thing and the value: "WHAT='text' is not a
/// number" or "WHAT='text' is out of range: expected lo..hi".
double parse_real(const std::string& what, const std::string& text, double lo, double hi);

/// `text` as an error message may show it: control bytes and bytes >= 0x7f escaped (\n, \x00), and
/// cut after `max_chars` with the full length noted, so a megabyte of garbage makes a short message.
std::string printable(const std::string& text, size_t max_chars = 120);

}  // namespace ddp::util

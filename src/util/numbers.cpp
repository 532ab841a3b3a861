#include "util/numbers.h"

#include <ddp/errors.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ddp::util {
namespace {

std::string trimmed(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

enum class Outcome { kOk, kEmpty, kNotInteger, kOutOfRange };

Outcome parse(const std::string& text, long long lo, long long hi, long long* out) {
  const std::string v = trimmed(text);
  if (v.empty()) return Outcome::kEmpty;
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(v.c_str(), &end, 10);
  // `end` must reach the string's end, not only a NUL: store values are bytes, and "0\0x" is no 0.
  if (end != v.c_str() + v.size() || errno == ERANGE) return Outcome::kNotInteger;
  if (parsed < lo || parsed > hi) return Outcome::kOutOfRange;
  *out = parsed;
  return Outcome::kOk;
}

// A bound as a person writes it: 1e+06, 0.5, 1024.
std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::optional<long long> to_int(const std::string& text, long long lo, long long hi) {
  long long v = 0;
  if (parse(text, lo, hi, &v) != Outcome::kOk) return std::nullopt;
  return v;
}

std::string printable(const std::string& text, size_t max_chars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) return out + "... (" + std::to_string(text.size()) + " bytes)";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

long long parse_int(const std::string& what, const std::string& text, long long lo, long long hi) {
  long long v = 0;
  const std::string quoted = what + "='" + printable(text) + "'";
  switch (parse(text, lo, hi, &v)) {
    case Outcome::kOk:
      return v;
    case Outcome::kEmpty:
      throw ConfigError(quoted + " is empty; expected an integer");
    case Outcome::kNotInteger:
      throw ConfigError(quoted + " is not an integer");
    case Outcome::kOutOfRange:
      break;
  }
  throw ConfigError(quoted + " is out of range: expected " + std::to_string(lo) + ".." + std::to_string(hi));
}

std::optional<double> to_real(const std::string& text) {
  const std::string v = trimmed(text);
  // strtod also reads hexadecimal ("0x1p3"), which no flag or variable of ours is written in.
  if (v.empty() || v.find_first_of("xX") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double parsed = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || errno == ERANGE || !std::isfinite(parsed)) return std::nullopt;
  return parsed;
}

double parse_real(const std::string& what, const std::string& text, double lo, double hi) {
  const std::string quoted = what + "='" + printable(text) + "'";
  const std::optional<double> v = to_real(text);
  if (!v) throw ConfigError(quoted + " is not a number");
  if (!(*v >= lo && *v <= hi))
    throw ConfigError(quoted + " is out of range: expected " + shortest(lo) + ".." + shortest(hi));
  return *v;
}

}  // namespace ddp::util

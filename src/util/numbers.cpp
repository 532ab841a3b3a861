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
  if (*end != '\0' || errno == ERANGE) return Outcome::kNotInteger;
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

long long parse_int(const std::string& what, const std::string& text, long long lo, long long hi) {
  long long v = 0;
  const std::string quoted = what + "='" + text + "'";
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
  if (*end != '\0' || errno == ERANGE || !std::isfinite(parsed)) return std::nullopt;
  return parsed;
}

double parse_real(const std::string& what, const std::string& text, double lo, double hi) {
  const std::string quoted = what + "='" + text + "'";
  const std::optional<double> v = to_real(text);
  if (!v) throw ConfigError(quoted + " is not a number");
  if (!(*v >= lo && *v <= hi))
    throw ConfigError(quoted + " is out of range: expected " + shortest(lo) + ".." + shortest(hi));
  return *v;
}

}  // namespace ddp::util

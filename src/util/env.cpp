#include "util/env.h"

#include <ddp/errors.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <cctype>
#include <cstring>

#include "util/numbers.h"

namespace ddp::util {

EnvMap process_env() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return env;
}

std::optional<std::string> env_get(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

long long require_env_int(const EnvMap& env, const std::string& name, long long lo, long long hi) {
  auto v = env_get(env, name);
  if (!v) throw ConfigError(name + " is not set");
  return parse_int(name, *v, lo, hi);
}

bool parse_bool(const std::string& name, const std::string& value) {
  std::string v = value;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no" || v.empty()) return false;
  throw ConfigError(name + "='" + printable(value) + "' is not a boolean (True/False)");
}

int parse_port(const std::string& name, const std::string& value, bool allow_zero) {
  return static_cast<int>(parse_int(name, value, allow_zero ? 0 : 1, 65535));
}

std::string parse_host(const std::string& name, const std::string& value) {
  const std::string quoted = name + "='" + printable(value) + "'";
  std::string host = value;
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw ConfigError(quoted + " opens a '[' it does not close");
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string::npos)
      throw ConfigError(quoted + ": brackets are for IPv6 addresses only");
  }
  if (host.empty()) throw ConfigError(quoted + " is not a host name or address");
  if (host.size() > 253) throw ConfigError(quoted + " is longer than a host name may be (253 characters)");
  for (char ch : host) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || c == '/' || c == '[' || c == ']')
      throw ConfigError(quoted + " is not a host name or address (blank, control character, '/' or stray bracket)");
  }
  return host;
}

HostPort split_host_port(const std::string& name, const std::string& value) {
  const std::string quoted = name + "='" + printable(value) + "'";
  HostPort hp;
  if (!value.empty() && value.front() == '[') {
    const auto close = value.find(']');
    if (close == std::string::npos) throw ConfigError(quoted + " opens a '[' it does not close");
    hp.host = parse_host(name, value.substr(0, close + 1));
    const std::string rest = value.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') throw ConfigError(quoted + " has '" + printable(rest) + "' after ']' (expected ':port')");
      hp.port = rest.substr(1);
    }
    return hp;
  }
  const auto colon = value.find(':');
  if (colon == std::string::npos) {
    hp.host = parse_host(name, value);
    return hp;
  }
  if (value.find(':', colon + 1) != std::string::npos)
    throw ConfigError(quoted + " has several ':': write an IPv6 address in brackets, [addr]:port");
  hp.host = parse_host(name, value.substr(0, colon));
  hp.port = value.substr(colon + 1);
  return hp;
}

NodeRange parse_node_range(const std::string& name, const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos) {
    const int n = static_cast<int>(parse_int(name, value, 1, kMaxRanks));
    return {n, n};
  }
  const int lo = static_cast<int>(parse_int(name, value.substr(0, colon), 1, kMaxRanks));
  const int hi = static_cast<int>(parse_int(name, value.substr(colon + 1), 1, kMaxRanks));
  if (lo > hi)
    throw ConfigError(name + "='" + printable(value) + "' is not MIN:MAX with MIN <= MAX (" + std::to_string(lo) +
                      " > " + std::to_string(hi) + ")");
  return {lo, hi};
}

int parse_node_count(const std::string& name, const std::string& value) {
  const NodeRange r = parse_node_range(name, value);
  if (r.min != r.max)
    throw ConfigError(name + "='" + printable(value) +
                      "' is an elastic range, which only a launcher's rendezvous can run (ddprun --rdzv-backend c10d)");
  return r.min;
}

}  // namespace ddp::util

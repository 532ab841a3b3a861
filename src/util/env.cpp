#include "util/env.h"

#include <ddp/errors.h>

#include <cctype>
#include <cstring>

#include "util/numbers.h"

extern char** environ;

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
  throw ConfigError(name + "='" + value + "' is not a boolean (True/False)");
}

int parse_port(const std::string& name, const std::string& value, bool allow_zero) {
  return static_cast<int>(parse_int(name, value, allow_zero ? 0 : 1, 65535));
}

int parse_node_count(const std::string& name, const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos) return static_cast<int>(parse_int(name, value, 1, kMaxRanks));
  const long long lo = parse_int(name, value.substr(0, colon), 1, kMaxRanks);
  const long long hi = parse_int(name, value.substr(colon + 1), 1, kMaxRanks);
  if (lo != hi) throw ConfigError(name + "='" + value + "' is an elastic range; ddp runs a fixed number of nodes");
  return static_cast<int>(lo);
}

}  // namespace ddp::util

#include "ddp/core/env_parse.h"

#include <ddp/errors.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace ddp::detail {

std::optional<std::string> env_get(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

long long parse_env_int(const std::string& name, const std::string& value, long long lo, long long hi) {
  std::string v = value;
  // Tolerate surrounding blanks (YAML values sometimes carry them), nothing else.
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  size_t start = 0;
  while (start < v.size() && std::isspace(static_cast<unsigned char>(v[start]))) ++start;
  v = v.substr(start);
  const std::string quoted = name + "='" + value + "'";
  if (v.empty()) throw ConfigError(quoted + " is empty; expected an integer");
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    throw ConfigError(quoted + " is not an integer");
  if (parsed < lo || parsed > hi)
    throw ConfigError(quoted + " is out of range: expected " + std::to_string(lo) + ".." + std::to_string(hi));
  return parsed;
}

long long require_env_int(const EnvMap& env, const std::string& name, long long lo, long long hi) {
  auto v = env_get(env, name);
  if (!v) throw ConfigError(name + " is not set");
  return parse_env_int(name, *v, lo, hi);
}

bool parse_env_bool(const std::string& name, const std::string& value) {
  std::string v = value;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no" || v.empty()) return false;
  throw ConfigError(name + "='" + value + "' is not a boolean (True/False)");
}

EnvMap process_env() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return env;
}

}  // namespace ddp::detail

#pragma once
// Strict parsing of environment values; every failure is a ConfigError naming the variable and value.
#include <ddp/export.h>
#include <map>
#include <optional>
#include <string>

namespace ddp::detail {

using EnvMap = std::map<std::string, std::string>;

/// The value of `name`, or nullopt when unset. An empty value counts as unset.
// exported until src/util lands
DDP_API std::optional<std::string> env_get(const EnvMap& env, const std::string& name);

/// Whole-string decimal integer in [lo, hi]; ConfigError "NAME='value' ..." otherwise.
// exported until src/util lands
DDP_API long long parse_env_int(const std::string& name, const std::string& value, long long lo, long long hi);
/// Required integer variable.
long long require_env_int(const EnvMap& env, const std::string& name, long long lo, long long hi);
/// True/False, true/false, 1/0, yes/no.
// exported until src/util lands
DDP_API bool parse_env_bool(const std::string& name, const std::string& value);
/// The process environment as a map.
// exported until src/util lands
DDP_API EnvMap process_env();

}  // namespace ddp::detail

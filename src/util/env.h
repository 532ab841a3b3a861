#pragma once
// The environment as a map, and the values ddp reads from it (or from flags spelled like it):
// every failure is a ConfigError naming the variable and its value.
//
//   const EnvMap env = process_env();
//   if (auto p = env_get(env, "MASTER_PORT")) port = parse_port("MASTER_PORT", *p);
#include <map>
#include <optional>
#include <string>

namespace ddp::util {

using EnvMap = std::map<std::string, std::string>;

/// The process environment as a map.
EnvMap process_env();

/// The value of `name`, or nullopt when unset. An empty value counts as unset.
std::optional<std::string> env_get(const EnvMap& env, const std::string& name);

/// A required integer variable in [lo, hi]: ConfigError "NAME is not set" or parse_int's.
long long require_env_int(const EnvMap& env, const std::string& name, long long lo, long long hi);

/// True/False, true/false, 1/0, yes/no (any case); empty is false.
bool parse_bool(const std::string& name, const std::string& value);

/// A TCP port, 1..65535 (0 too when `allow_zero`: "pick a free one").
int parse_port(const std::string& name, const std::string& value, bool allow_zero = false);

/// A host name or address as a flag or variable gives it (MASTER_ADDR, --master-addr), returned
/// without the brackets an IPv6 address may carry ("[::1]" -> "::1"). ConfigError naming `name` for
/// blanks, control bytes, '/', unbalanced brackets or more than 253 characters.
std::string parse_host(const std::string& name, const std::string& value);

/// "host:port", "host", "[v6addr]:port" or "[v6addr]" (--rdzv-endpoint): the host (brackets removed,
/// checked as parse_host does) and the port text when there is one (not yet parsed). A bare IPv6
/// address ("::1:29400") is ambiguous and refused: ConfigError asking for brackets.
struct HostPort {
  std::string host;
  std::optional<std::string> port;
};
HostPort split_host_port(const std::string& name, const std::string& value);

/// A node count as torchrun spells it, "N" or "MIN:MAX" (1 <= MIN <= MAX): the elastic range ddprun's
/// c10d rendezvous runs with. "N" is N:N.
struct NodeRange {
  int min = 1;
  int max = 1;
};
NodeRange parse_node_range(const std::string& name, const std::string& value);

/// A fixed node count, "N" or "N:N": what a process started without a launcher can use (only a
/// launcher's rendezvous can run an elastic range).
int parse_node_count(const std::string& name, const std::string& value);

/// The most ranks (and nodes) ddp accepts anywhere: bounds for the range checks.
constexpr long long kMaxRanks = 1 << 20;

}  // namespace ddp::util

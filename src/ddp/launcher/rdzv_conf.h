#pragma once
// torchrun's --rdzv-conf "key=value,key=value": the c10d rendezvous's settings, each either taken
// by ddprun or named in its log as having no effect here (none is dropped silently); an unknown key
// or a malformed list is a ConfigError naming it. Keys, from torch 2.6's dynamic_rendezvous.py and
// c10d_rendezvous_backend.py:
//   join_timeout (s)       how long a node waits for the others        -> --join-timeout
//   timeout (s)            the static backend's name for the same      -> --join-timeout
//   read_timeout (s)       how long one store request may take         -> --store-timeout
//   last_call_timeout (s)  a round with MIN nodes waits this long for more (c10d rendezvous)
//   is_host (bool)         whether this node hosts the store (c10d rendezvous)
//   keep_alive_interval (s), keep_alive_max_attempt (count): the nodes' heartbeats (c10d rendezvous)
//   close_timeout, heartbeat_timeout: torch's agents' shutdown, and torch 1.13's heartbeat; no
//                       effect here
//   use_libuv              how torch's store serves; ddprun's store is its own server

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

struct RdzvConf {
  std::optional<std::chrono::milliseconds> join_timeout;
  std::optional<std::chrono::milliseconds> store_timeout;
  std::optional<std::chrono::milliseconds> last_call;
  std::optional<bool> is_host;
  std::optional<std::chrono::milliseconds> keep_alive_interval;
  std::optional<int> keep_alive_max_attempt;
  /// One line per accepted key that has no effect here, saying why (ddprun logs them).
  std::vector<std::string> no_effect;
};

/// `source` names the flag or variable in errors ("--rdzv-conf", "PET_RDZV_CONF").
RdzvConf parse_rdzv_conf(const std::string& source, const std::string& text);

}  // namespace ddp::launcher

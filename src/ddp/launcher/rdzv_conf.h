#pragma once
// torchrun's --rdzv-conf "key=value,key=value": the c10d rendezvous's settings, each either taken
// by ddprun or named in its log as having no effect here (none is dropped silently); an unknown key
// or a malformed list is a ConfigError naming it. Keys, from torch 2.6's dynamic_rendezvous.py and
// c10d_rendezvous_backend.py:
//   join_timeout (s)    how long a node waits for the others        -> --join-timeout
//   timeout (s)         the static backend's name for the same      -> --join-timeout
//   read_timeout (s)    how long one store request may take         -> --store-timeout
//   last_call_timeout, close_timeout, heartbeat_timeout, keep_alive_interval, keep_alive_max_attempt:
//                       the elastic round's phases and heartbeats: no effect with a fixed node count
//   is_host, use_libuv  where and how the store runs: ddprun's is always on node 0, its own server

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

struct RdzvConf {
  std::optional<std::chrono::milliseconds> join_timeout;
  std::optional<std::chrono::milliseconds> store_timeout;
  /// One line per accepted key that has no effect here, saying why (ddprun logs them).
  std::vector<std::string> no_effect;
};

/// `source` names the flag or variable in errors ("--rdzv-conf", "PET_RDZV_CONF").
RdzvConf parse_rdzv_conf(const std::string& source, const std::string& text);

}  // namespace ddp::launcher

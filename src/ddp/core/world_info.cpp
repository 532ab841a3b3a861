// The environment contract: which launcher or operator started us, and where we sit in the job.
#include <ddp/errors.h>
#include <ddp/world_info.h>

#include <sstream>
#include <vector>

#include "ddp/core/restart_count.h"
#include "util/env.h"
#include "util/json.h"
#include "util/numbers.h"

namespace ddp {
namespace {

using util::EnvMap;
using util::env_get;
using util::kMaxRanks;
using util::parse_int;
using util::parse_port;
using util::require_env_int;

std::string require_nonempty(const EnvMap& env, const std::string& name, const std::string& why) {
  auto v = env_get(env, name);
  if (!v) throw ConfigError(name + " is not set (" + why + ")");
  return *v;
}

void check_rank_below(const std::string& rank_name, int rank, const std::string& size_name, int size) {
  if (rank >= size)
    throw ConfigError(rank_name + "=" + std::to_string(rank) + " is not below " + size_name + "=" +
                      std::to_string(size));
}

// RANK below WORLD_SIZE, both required (rules 1 and 3).
void read_rank_and_world_size(const EnvMap& env, WorldInfo& w) {
  w.world_size = static_cast<int>(require_env_int(env, "WORLD_SIZE", 1, kMaxRanks));
  w.rank = static_cast<int>(require_env_int(env, "RANK", 0, kMaxRanks));
  check_rank_below("RANK", w.rank, "WORLD_SIZE", w.world_size);
}

// --- 1. torchrun / ddprun children ----------------------------------------------------------------
WorldInfo from_torchrun(const EnvMap& env) {
  WorldInfo w;
  w.source = "torchrun";
  const std::string why = "a launcher that sets LOCAL_RANK must set it too";
  read_rank_and_world_size(env, w);
  w.local_rank = static_cast<int>(require_env_int(env, "LOCAL_RANK", 0, kMaxRanks));
  auto lws = env_get(env, "LOCAL_WORLD_SIZE");
  w.local_world_size = lws ? static_cast<int>(parse_int("LOCAL_WORLD_SIZE", *lws, 1, kMaxRanks)) : w.world_size;
  check_rank_below("LOCAL_RANK", w.local_rank, "LOCAL_WORLD_SIZE", w.local_world_size);
  if (w.local_world_size > w.world_size)
    throw ConfigError("LOCAL_WORLD_SIZE=" + std::to_string(w.local_world_size) + " exceeds WORLD_SIZE=" +
                      std::to_string(w.world_size));
  auto gr = env_get(env, "GROUP_RANK");
  w.group_rank = gr ? static_cast<int>(parse_int("GROUP_RANK", *gr, 0, kMaxRanks)) : 0;
  w.master_addr = util::parse_host("MASTER_ADDR", require_nonempty(env, "MASTER_ADDR", why));
  w.master_port = parse_port("MASTER_PORT", require_nonempty(env, "MASTER_PORT", why));
  w.restart_count = detail::restart_count_from_env(env);
  if (auto v = env_get(env, "TORCHELASTIC_MAX_RESTARTS"))
    w.max_restarts = static_cast<int>(parse_int("TORCHELASTIC_MAX_RESTARTS", *v, 0, 1 << 30));
  if (auto v = env_get(env, "TORCHELASTIC_RUN_ID")) w.run_id = *v;
  if (auto v = env_get(env, "TORCHELASTIC_USE_AGENT_STORE"))
    w.use_agent_store = util::parse_bool("TORCHELASTIC_USE_AGENT_STORE", *v);
  return w;
}

// --- 2. Kubeflow PET_* without a launcher: one process per node ----------------------------------
WorldInfo from_pet(const EnvMap& env) {
  WorldInfo w;
  w.source = "kubeflow-pet";
  int nnodes = util::parse_node_count("PET_NNODES", *env_get(env, "PET_NNODES"));
  if (auto nproc = env_get(env, "PET_NPROC_PER_NODE")) {
    if (*nproc != "auto" && *nproc != "cpu" && *nproc != "gpu") {
      int n = static_cast<int>(parse_int("PET_NPROC_PER_NODE", *nproc, 1, 4096));
      if (n != 1)
        throw ConfigError("PET_NPROC_PER_NODE=" + util::printable(*nproc) +
                          " asks for several processes per node, but this process was started without a "
                          "launcher: make ddprun the container's command (ddprun ... <trainer> <args>)");
    }
  }
  int node_rank = 0;
  if (auto v = env_get(env, "PET_NODE_RANK")) {
    node_rank = static_cast<int>(parse_int("PET_NODE_RANK", *v, 0, kMaxRanks));
  } else if (auto v = env_get(env, "JOB_COMPLETION_INDEX")) {
    node_rank = static_cast<int>(parse_int("JOB_COMPLETION_INDEX", *v, 0, kMaxRanks));
  } else if (nnodes > 1) {
    throw ConfigError("PET_NNODES=" + std::to_string(nnodes) +
                      " but neither PET_NODE_RANK nor JOB_COMPLETION_INDEX is set");
  }
  check_rank_below(env_get(env, "PET_NODE_RANK") ? "PET_NODE_RANK" : "JOB_COMPLETION_INDEX", node_rank,
                   "PET_NNODES", nnodes);
  w.rank = w.group_rank = node_rank;
  w.world_size = nnodes;
  w.local_rank = 0;
  w.local_world_size = 1;
  if (auto a = env_get(env, "PET_MASTER_ADDR")) w.master_addr = util::parse_host("PET_MASTER_ADDR", *a);
  else if (auto a2 = env_get(env, "MASTER_ADDR")) w.master_addr = util::parse_host("MASTER_ADDR", *a2);
  else if (nnodes > 1) throw ConfigError("PET_MASTER_ADDR is not set (needed with PET_NNODES > 1)");
  if (auto p = env_get(env, "PET_MASTER_PORT")) w.master_port = parse_port("PET_MASTER_PORT", *p);
  else if (auto p2 = env_get(env, "MASTER_PORT")) w.master_port = parse_port("MASTER_PORT", *p2);
  else if (nnodes > 1) throw ConfigError("PET_MASTER_PORT is not set (needed with PET_NNODES > 1)");
  return w;
}

// --- 3. PyTorchJob v1 -----------------------------------------------------------------------------
WorldInfo from_pytorchjob(const EnvMap& env) {
  WorldInfo w;
  w.source = "pytorchjob";
  const std::string why = "PyTorchJob sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK together";
  read_rank_and_world_size(env, w);
  w.group_rank = w.rank;
  if (w.world_size > 1) {
    w.master_addr = util::parse_host("MASTER_ADDR", require_nonempty(env, "MASTER_ADDR", why));
    w.master_port = parse_port("MASTER_PORT", require_nonempty(env, "MASTER_PORT", why));
  } else {
    if (auto a = env_get(env, "MASTER_ADDR")) w.master_addr = util::parse_host("MASTER_ADDR", *a);
    if (auto p = env_get(env, "MASTER_PORT")) w.master_port = parse_port("MASTER_PORT", *p);
  }
  return w;
}

// --- 4. SageMaker -----------------------------------------------------------------------------------
// SM_HOSTS is a JSON list of host names, e.g. ["algo-1","algo-2"] (util/json.h reads it).
std::vector<std::string> parse_host_list(const std::string& text) {
  const std::string quoted = "SM_HOSTS='" + util::printable(text) + "'";
  const util::JsonValue list = util::parse_json(text, quoted);
  if (!list.is(util::JsonValue::Kind::kArray))
    throw ConfigError(quoted + " is " + util::JsonValue::kind_name(list.kind()) + ", not a JSON list of host names");
  std::vector<std::string> hosts;
  for (const util::JsonValue& item : list.array_items()) {
    const std::string& host = item.string_value(quoted + ": host " + std::to_string(hosts.size()));
    if (host.empty()) throw ConfigError(quoted + ": host " + std::to_string(hosts.size()) + " is an empty name");
    hosts.push_back(host);
  }
  if (hosts.empty()) throw ConfigError(quoted + " is an empty list");
  return hosts;
}

WorldInfo from_sagemaker(const EnvMap& env) {
  WorldInfo w;
  w.source = "sagemaker";
  std::vector<std::string> hosts = parse_host_list(*env_get(env, "SM_HOSTS"));
  std::string current = require_nonempty(env, "SM_CURRENT_HOST", "SageMaker sets it with SM_HOSTS");
  int index = -1;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i] == current) index = static_cast<int>(i);
  if (index < 0)
    throw ConfigError("SM_CURRENT_HOST='" + util::printable(current) + "' is not in SM_HOSTS='" +
                      util::printable(*env_get(env, "SM_HOSTS")) + "'");
  if (auto g = env_get(env, "SM_NUM_GPUS")) parse_int("SM_NUM_GPUS", *g, 0, 4096);
  w.rank = w.group_rank = index;
  w.world_size = static_cast<int>(hosts.size());
  w.master_addr = hosts[0];
  w.master_port = 7777;
  return w;
}

}  // namespace

WorldInfo WorldInfo::from_env(const std::map<std::string, std::string>& env) {
  if (env_get(env, "LOCAL_RANK")) return from_torchrun(env);
  if (env_get(env, "PET_NNODES")) return from_pet(env);
  if (env_get(env, "RANK") || env_get(env, "WORLD_SIZE")) return from_pytorchjob(env);
  if (env_get(env, "SM_HOSTS")) return from_sagemaker(env);
  WorldInfo w;
  if (auto p = env_get(env, "MASTER_PORT")) w.master_port = parse_port("MASTER_PORT", *p);
  if (auto a = env_get(env, "MASTER_ADDR")) w.master_addr = util::parse_host("MASTER_ADDR", *a);
  return w;
}

WorldInfo WorldInfo::from_env() { return from_env(util::process_env()); }

std::string WorldInfo::describe() const {
  std::ostringstream s;
  s << "rank " << rank << "/" << world_size << " (local " << local_rank << "/" << local_world_size
    << ", node " << group_rank << ") master " << master_addr << ":" << master_port << " via " << source;
  if (use_agent_store) s << " (agent store)";
  if (restart_count > 0) s << ", restart " << restart_count;
  return s.str();
}

}  // namespace ddp

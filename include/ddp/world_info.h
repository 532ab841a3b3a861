#pragma once
// Where this process sits in the job, read from the environment a launcher or operator injected.
//
// Precedence (first match wins), every value validated; a bad value is a ddp::ConfigError that
// names the variable and its value:
//   1. torchrun / ddprun children (LOCAL_RANK set): RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
//      GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_* (USE_AGENT_STORE=True: rank 0 is a
//      store client too, the agent hosts the store)
//   2. Kubeflow PET_* (Trainer v2, operator >= 1.7): PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK
//      (or JOB_COMPLETION_INDEX), PET_MASTER_ADDR, PET_MASTER_PORT
//   3. PyTorchJob v1: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
//   4. SageMaker: SM_HOSTS (JSON list), SM_CURRENT_HOST; master = first host, port 7777
//   5. nothing set: one process, rank 0 of 1
//
//   ddp::WorldInfo world = ddp::WorldInfo::from_env();
//   if (world.rank == 0) { ... }

#include <ddp/export.h>
#include <map>
#include <string>

namespace ddp {

struct DDP_API WorldInfo {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int group_rank = 0;  ///< node index
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT
  int max_restarts = 0;   ///< TORCHELASTIC_MAX_RESTARTS
  std::string run_id;     ///< TORCHELASTIC_RUN_ID
  /// True when a launcher hosts the store and every rank, rank 0 included, is a client.
  bool use_agent_store = false;
  /// Which rule matched: "torchrun", "kubeflow-pet", "pytorchjob", "sagemaker" or "single".
  std::string source = "single";

  bool is_master() const { return rank == 0; }
  /// One line for logs: "rank 1/4 (local 1/2, node 0) master 10.0.0.1:23456 via torchrun".
  std::string describe() const;

  /// Reads the process environment.
  static WorldInfo from_env();
  /// Reads the given variables instead (tests, launchers).
  static WorldInfo from_env(const std::map<std::string, std::string>& env);
};

}  // namespace ddp

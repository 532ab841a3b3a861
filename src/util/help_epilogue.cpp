#include "util/help_epilogue.h"

#include <ddp/errors.h>

#include <sstream>
#include <vector>

namespace ddp::util {
namespace {

// `names` longer than the column get a line of their own; a '\n' in `meaning` continues it below.
struct Entry {
  std::string names;
  std::string meaning;
};

// A trainer's own rank comes from WorldInfo::from_env (src/ddp/core/world_info.cpp): first rule wins.
const std::vector<Entry>& trainer_entries() {
  static const std::vector<Entry> entries = {
      {"RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK", "1. torchrun / ddprun (LOCAL_RANK set)"},
      {"TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID",
       "the launcher's attempt, restart limit and job id"},
      {"TORCHELASTIC_USE_AGENT_STORE", "True: the launcher hosts the store; rank 0 is a client too"},
      {"PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (or JOB_COMPLETION_INDEX)",
       "2. Kubeflow Trainer v2 / training-operator >= 1.7 (PET_NNODES set);\n"
       "PET_NPROC_PER_NODE must be 1 or auto without ddprun"},
      {"PET_MASTER_ADDR, PET_MASTER_PORT", "rule 2's store address"},
      {"RANK, WORLD_SIZE", "3. PyTorchJob v1 (RANK or WORLD_SIZE set): RANK is the pod index"},
      {"MASTER_ADDR, MASTER_PORT", "the rendezvous store on rank 0 (rules 1, 3 and 5)"},
      {"SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS", "4. SageMaker: master = the first host, port 7777"},
      {"(none of the above)", "5. one process, rank 0 of 1"},
      {"SM_CHANNEL_TRAIN, SM_CHANNEL_TRAINING", "--data-dir when the flag is not given"},
      {"SM_MODEL_DIR", "--model-dir when the flag is not given"},
      {"SAGEMAKER_BASE_DIR", "`<trainer> train` (SageMaker mode): the folder playing /opt/ml"},
      {"SAGEMAKER_PROGRAM", "`<trainer> train`: train_cifar10 or train_ranzcr runs (as the\n"
                            "`trainer` hyperparameter; the two must agree when both are set)"},
      {"OMP_NUM_THREADS", "intra-op threads per rank when --threads is 0"},
      {"CUDA_VISIBLE_DEVICES", "the GPUs this process may use (--device auto: cuda:LOCAL_RANK)"},
      {"GLOO_SOCKET_IFNAME, DDP_SOCKET_IFNAME", "the network interface of the gloo group"},
      {"DDP_NCCL_BLOCKING_WAIT", "1: an NCCL wait() blocks the CPU; c10d's TORCH_NCCL_BLOCKING_WAIT\n"
                                 "and NCCL_BLOCKING_WAIT are read too (DDP_* wins)"},
      {"DDP_NCCL_RECORD_STREAMS", "0: NCCL ops do not record their tensors on the NCCL stream;\n"
                                  "c10d's TORCH_NCCL_AVOID_RECORD_STREAMS=1 means the same (DDP_* wins)"},
      {"NCCL_*", "passed to NCCL (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME, ...)"},
  };
  return entries;
}

// ddprun's own flags and node rank (src/ddp/launcher/launch_config.cpp); its workers get torchrun's
// variables (docs/DDPRUN.md).
const std::vector<Entry>& launcher_entries() {
  static const std::vector<Entry> entries = {
      {"PET_<OPTION>", "any option above (a flag wins), e.g. PET_NNODES,\n"
                       "PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT"},
      {"JOB_COMPLETION_INDEX", "the node rank when --node-rank and PET_NODE_RANK are unset"},
      {"RANK, WORLD_SIZE", "without LOCAL_RANK (PyTorchJob v1): node rank and node count"},
      {"MASTER_ADDR, MASTER_PORT", "node 0's store when --master-addr / --master-port are unset"},
      {"CUDA_VISIBLE_DEVICES", "the GPUs that --nproc-per-node auto|gpu counts"},
      {"OMP_NUM_THREADS", "unset with several workers: each worker gets OMP_NUM_THREADS=1"},
      {"PATH", "where a program name without '/' is looked up"},
      {"TMPDIR", "where the temporary torchelastic_* folder for the workers'\n"
                 "error files (and --tee logs without --log-dir) is made [/tmp]"},
  };
  return entries;
}

// Read by libddp in every process.
const std::vector<Entry>& common_entries() {
  static const std::vector<Entry> entries = {
      {"DDP_LOG_LEVEL", "debug|info|warn|error|off [info]; log lines go to stderr"},
      {"DDP_STORE_TOKEN", "shared secret of the rendezvous store (the same on every node)"},
      {"TORCHELASTIC_ERROR_FILE", "where an error that ends the program is recorded (torch's\n"
                                  "@record JSON); ddprun and torchrun set it per worker"},
  };
  return entries;
}

void write_entries(std::ostringstream& out, const std::vector<Entry>& entries) {
  constexpr size_t kColumn = 28;
  const std::string indent(kColumn, ' ');
  for (const auto& e : entries) {
    std::string left = "  " + e.names;
    if (left.size() < kColumn - 1) {
      out << left << std::string(kColumn - left.size(), ' ');
    } else {
      out << left << "\n" << indent;
    }
    for (char c : e.meaning) {
      out << c;
      if (c == '\n') out << indent;
    }
    out << "\n";
  }
}

void write_exit_code(std::ostringstream& out, const std::string& code, const std::string& meaning) {
  out << "  " << code << std::string(code.size() < 7 ? 7 - code.size() : 1, ' ') << meaning << "\n";
}

}  // namespace

std::string help_epilogue(HelpFor program) {
  std::ostringstream out;
  out << "environment variables (docs/ENVIRONMENT.md";
  out << (program == HelpFor::kTrainer ? "; rules 1-5: the first that matches wins):\n" : "):\n");
  write_entries(out, program == HelpFor::kTrainer ? trainer_entries() : launcher_entries());
  write_entries(out, common_entries());

  out << "\nexit codes (PyTorchJob restartPolicy ExitCode: 1-127 permanent, >= 128 retryable):\n";
  write_exit_code(out, "0", "success");
  write_exit_code(out, std::to_string(kExitInternal), "unexpected internal error");
  write_exit_code(out, std::to_string(kExitConfig), "bad configuration or data (a flag, a variable, an input file)");
  write_exit_code(out, std::to_string(kExitTerminated), "stopped by SIGTERM (a trainer writes a checkpoint first)");
  write_exit_code(out, std::to_string(kExitPeerLost), "a peer was lost mid-collective");
  write_exit_code(out, std::to_string(kExitTimeout), "an operation timed out");
  write_exit_code(out, std::to_string(kExitStoreUnreachable), "the rendezvous store could not be reached");
  write_exit_code(out, "128+N", "killed by signal N");
  if (program == HelpFor::kLauncher)
    out << "ddprun exits with the code of the worker that ended the job, or with its own (2 before\n"
           "starting anything, 202 when node 0's store is gone, 128+N when stopped by signal N).\n";
  return out.str();
}

}  // namespace ddp::util
